// The process the approvals kill test kills: an agent on a stored thread
// asks for search (free) and send (needs approval) in one turn, pauses, and
// prints "paused" once search's result is committed; then it waits to be
// killed. Each tool run appends its name to RUN_LOG, so that runs are counted
// across processes.
//
//   troupe_approvals_kill_child STORE_URI RUN_LOG

#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/store/open_store.hpp"
#include "support/approvals_kill_agent.hpp"

#include <cstdio>
#include <thread>

using namespace troupe;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  auto store = open_store(argv[1]);
  if (!store) return 3;
  runtime rt({.provider = testing::search_and_send_model(),
              .store = store->threads,
              .telemetry = std::make_shared<log_sink>(false),
              .owner_id = testing::kill_test_owner});
  testing::add_logged_tools(rt, argv[2]);
  agent a = rt.spawn_agent(testing::kill_test_agent());
  const auto r = a.ask("mail bob", {.request_id = "r1"}).await(std::chrono::seconds(30));
  if (!r || !r->paused()) return 4;
  for (;;) {  // until search's result is committed: what the kill must not lose
    const auto t = a.snapshot();
    if (t && !t->of_kind(entry_kind::tool_result).empty()) break;
    std::this_thread::yield();
  }
  std::printf("paused\n");
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
