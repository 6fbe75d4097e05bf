// A long conversation under a small context budget keeps working: every call
// stays within the budget and the model is given the summary of what fell out.

#include "support/runtime_harness.hpp"

#include <atomic>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

TEST_CASE("200 turns with tool calls under a small budget, with summaries") {
  std::mutex m;
  std::vector<llm_stream> calls;  // every model call the agent made
  std::atomic<int> summaries{0};
  auto model = std::make_shared<scripted_provider>([&](const llm_stream& s) {
    {
      std::lock_guard lock(m);
      calls.push_back(s);
    }
    if (s.messages.front().content.rfind("You keep the memory", 0) == 0) {
      const int n = ++summaries;
      return scripted_reply::text("SUMMARY-" + std::to_string(n) + ": the user asked many questions.");
    }
    if (s.messages.back().role == "tool") return scripted_reply::text("The lookup said: " + s.messages.back().content);
    return scripted_reply::tools({call("t", "lookup", {{"key", question_in(s)}})});
  });
  runtime rt({.provider = model});
  rt.tools().add(make_tool(
      "lookup",
      [](const json::object& a, const tool_context&) {
        return json::value{{"key", a.at("key")}, {"value", std::string(200, 'v')}};
      },
      false));
  agent_spec spec{.id = "long", .model = "m", .system_prompt = "Answer from the lookup.", .tools = {"lookup"}};
  spec.context.max_input_tokens = 1200;
  spec.context.reserve_output_tokens = 200;
  spec.context.keep_last_turns = 0;
  spec.context.summaries = summarization::request_new;
  agent a = rt.spawn_agent(spec);

  for (int turn = 0; turn < 200; ++turn)
    REQUIRE(answer_of(must_reply(a.ask("Question number " + std::to_string(turn) + "?"))).rfind("The lookup said", 0) ==
            0);

  std::lock_guard lock(m);
  std::size_t conversation_calls = 0, with_summary = 0;
  for (const llm_stream& s : calls) {
    if (s.messages.front().content.rfind("You keep the memory", 0) == 0) continue;
    ++conversation_calls;
    // Within the budget by the projection's own count...
    CHECK((s.context.estimated_tokens <= 1000 || s.context.oversized));
    // ...and by a coarse count of what was actually sent (4 bytes a token).
    std::size_t bytes = 0;
    for (const llm_message& msg : s.messages) {
      bytes += msg.content.size();
      for (const tool_call& c : msg.tool_calls) bytes += json::serialize(c.arguments).size() + c.name.size();
    }
    CHECK(bytes / 4 <= 1000);
    if (s.context.summary_used) {
      ++with_summary;
      CHECK_THAT(s.messages[1].content, Catch::Contains("SUMMARY-"));
    }
  }
  CHECK(conversation_calls == 400);
  CHECK(summaries > 0);
  CHECK(with_summary > 300);  // once the first summary exists, every call carries one
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(t->of_kind("summary").size() == static_cast<std::size_t>(summaries.load()));
  CHECK(every_call_answered(*t));
}
