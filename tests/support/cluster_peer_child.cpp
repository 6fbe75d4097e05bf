// A node the cluster tests can kill: a runtime whose agent "slow" calls a
// tool that never returns, listening for other nodes on a free port of
// 127.0.0.1. Prints "port N" once it listens, then waits to be killed.
// With "ask PORT" it is a caller instead: it asks the agent "helper" of the
// node at 127.0.0.1:PORT twice, on the thread "outliving" with
// outlives_caller set and on the thread "tied" without, prints "asked", and
// waits to be killed.
//
//   troupe_cluster_peer_child SECRET [ask PORT]

#include "actors/cluster/node.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

using namespace troupe;

namespace {

[[noreturn]] void ask_then_wait(const std::string& secret, std::uint16_t port) {
  runtime rt({.provider =
                  std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("unused"); }),
              .telemetry = std::make_shared<log_sink>(false)});
  node n(rt, {.secret = secret});
  remote_agent helper = n.agent_at({"127.0.0.1", port}, "helper");
  request outliving = helper.ask("go", {.thread_id = "outliving", .outlives_caller = true});
  request tied = helper.ask("go", {.thread_id = "tied"});
  std::printf("asked\n");
  std::fflush(stdout);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[2]) == "ask")
    ask_then_wait(argv[1], static_cast<std::uint16_t>(std::stoi(argv[3])));
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
