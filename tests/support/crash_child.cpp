// The process the crash test kills: an agent on a SQLite thread store that
// keeps asking questions, each answered through a tool call, and prints
// "committed N" (the thread's size) after every reply. On start it continues
// the conversation it finds in the store.
//
//   troupe_crash_child DB_PATH

#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <string>

using namespace troupe;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("noted: " + s.messages.back().content);
    return scripted_reply::tools(
        {tool_call{"t1", "work", {{"step", 1}}, std::nullopt}, tool_call{"t2", "work", {{"step", 2}}, std::nullopt}});
  });
  runtime rt({.provider = model,
              .store = std::make_shared<sqlite_store>(argv[1]),
              .telemetry = std::make_shared<log_sink>(false),
              // The same owner as the process killed before it: a restarted replica
              // takes its threads back at once instead of waiting for its leases.
              .owner_id = "crash-child"});
  tool work;
  work.spec = {"work", "Does a little work.", {{"type", "object"}}};
  work.blocking = false;
  work.run = [](const boost::json::object& a, const tool_context&) { return boost::json::value(a); };
  rt.tools().add(work);
  agent a = rt.spawn_agent({.id = "crash", .model = "m", .tools = {"work"}});

  for (;;) {
    const auto t = a.snapshot("crash:default");
    if (!t) return 3;
    std::size_t asked = 0;
    for (const entry* e : t->of_kind("message"))
      if (e->payload.at("role") == "user") ++asked;
    const auto r = a.ask("turn " + std::to_string(asked + 1)).await(std::chrono::seconds(30));
    if (!r || !r->ok()) return 4;
    const auto after = a.snapshot("crash:default");
    std::printf("committed %zu\n", after ? after->size() : 0);
    std::fflush(stdout);
  }
}
