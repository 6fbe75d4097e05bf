#pragma once
// What the approvals kill test's child and the test itself share: the
// model, the tools (each run logged to a file, one line per run), the agent.

#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <memory>
#include <string>

namespace troupe::testing {

inline constexpr const char* kill_test_owner = "approvals-kill-test";

// Asked anything, the model searches and sends in one turn; shown a result,
// it answers with it.
inline std::shared_ptr<scripted_provider> search_and_send_model() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (const llm_message& last = s.messages.back(); last.role == "tool")
      return scripted_reply::text("done: " + last.content);
    return scripted_reply::tools({tool_call{"s1", "search", {{"q", "x"}}, std::nullopt},
                                  tool_call{"s2", "send", {{"to", "bob"}}, std::nullopt}});
  });
}

// One line per run, written before the tool answers: a run the kill cut
// short is counted too.
inline void log_run(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const std::string line = what + "\n";
  [[maybe_unused]] const auto written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

inline void add_logged_tools(runtime& rt, const std::string& log) {
  for (const char* name : {"search", "send"}) {
    tool t;
    t.spec = {name, name, {{"type", "object"}}};
    t.blocking = false;
    t.run = [log, what = std::string(name)](const boost::json::object&, const tool_context&) {
      log_run(log, what);
      return boost::json::value(what + " ran");
    };
    rt.tools().add(t);
  }
}

inline agent_spec kill_test_agent() {
  agent_spec spec{.id = "a", .model = "m", .tools = {"search", "send"}};
  spec.approvals["send"] = approval_rule{approval_mode::always, {}, "sends an email"};
  return spec;
}

}  // namespace troupe::testing
