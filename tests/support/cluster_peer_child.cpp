// A node the cluster tests can kill: a runtime whose agent "slow" calls a
// tool that never returns, listening for other nodes on a free port of
// 127.0.0.1. Prints "port N" once it listens, then waits to be killed.
//
//   troupe_cluster_peer_child SECRET

#include "actors/cluster/node.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <unistd.h>

#include <cstdio>
#include <thread>

using namespace troupe;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done");
    return scripted_reply::tools({tool_call{"c1", "hang", {}, std::nullopt}});
  });
  runtime rt({.provider = model, .telemetry = std::make_shared<log_sink>(false)});
  tool hang;
  hang.spec = {"hang", "Never returns.", {{"type", "object"}}};
  hang.run = [](const boost::json::object&, const tool_context&) -> boost::json::value {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  };
  rt.tools().add(hang);
  rt.spawn_agent({.id = "slow", .model = "m", .tools = {"hang"}});
  node n(rt, {.secret = argv[1], .listen_port = 0});
  std::printf("port %u\n", static_cast<unsigned>(n.address()->port));
  std::fflush(stdout);
  for (;;) ::pause();
}
