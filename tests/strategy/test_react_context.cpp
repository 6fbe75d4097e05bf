// The machine under a context policy: windowed calls, and summaries written
// beside the requests.

#include "support/react_harness.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

harness small_window(summarization s = summarization::request_new) {
  react_config c = config_with_tools({"search"});
  c.context.keep_last_turns = 2;
  c.context.summaries = s;
  c.summary_model = "summary-model";
  return harness(c);
}

// Runs one turn: question, answer.
void turn(harness& h, const std::string& id) {
  const llm_stream s = h.ask(id, "question " + id);
  for (const directive& d : h.last.directives)
    if (std::holds_alternative<summarize>(d)) h.pending_summaries.push_back(std::get<summarize>(d));
  h.feed(answer(s.call_id, "answer " + id));
}

}  // namespace

TEST_CASE("each model call carries how its context was projected") {
  harness h = small_window(summarization::use_existing);
  turn(h, "r1");
  turn(h, "r2");
  const llm_stream s = h.ask("r3", "third");
  CHECK(s.context.basis_rev == 4);
  CHECK(s.context.entries_total == 4);
  CHECK(s.context.pending_count == 1);
  CHECK(s.context.truncated);       // r1 fell out of the last two turns
  CHECK(!s.context.needs_summary);  // summaries are not requested
  CHECK(s.context.dropped_to_seq == 1);
  REQUIRE(s.messages.size() == 4);  // system, r2's question and answer, r3's question
  CHECK(s.messages[1].content == "question r2");
}

TEST_CASE("a summary is requested when the window drops something, and used once written") {
  harness h = small_window();
  turn(h, "r1");
  turn(h, "r2");
  CHECK(h.pending_summaries.empty());
  const llm_stream s = h.ask("r3", "third");
  const summarize sum = only<summarize>(h.last.directives);
  CHECK(sum.model == "summary-model");
  // r1 fell out; r2 goes into the summary too, so that what stays (r3) is at
  // most half of the two turns the window keeps.
  CHECK(sum.to_seq == 3);
  CHECK(sum.from_seq == 0);
  REQUIRE(sum.messages.size() == 2);
  CHECK_THAT(sum.messages[1].content, Catch::Contains("user: question r1") && Catch::Contains("assistant: answer r1") &&
                                          Catch::Contains("assistant: answer r2"));
  CHECK(h.state().summary_call_id == sum.call_id);

  SECTION("the summary is committed when it arrives, even in the middle of a request") {
    const auto size = h.history().size();
    CHECK(h.feed(answer(sum.call_id, "The user asked r1.")).empty());
    REQUIRE(h.history().size() == size + 1);
    const entry& e = *h.history().last();
    CHECK(e.kind == "summary");
    CHECK(e.payload.at("to_seq") == 3);
    CHECK(e.payload.at("content") == "The user asked r1.");
    CHECK(h.state().status == react_status::awaiting_llm);  // the request goes on
    CHECK(h.state().call_id == s.call_id);
    CHECK(h.state().summary_call_id.empty());

    h.feed(answer(s.call_id, "answer r3"));
    const llm_stream next = h.ask("r4", "fourth");
    CHECK(next.context.summary_used);
    CHECK_THAT(next.messages[1].content, Catch::Contains("The user asked r1."));
  }
  SECTION("only one summary is written at a time") {
    h.feed(answer(s.call_id, "answer r3"));
    h.ask("r4", "fourth");
    CHECK(all_of_type<summarize>(h.last.directives).empty());
  }
  SECTION("a failed summary is asked for again by a later call") {
    h.feed(llm_result{sum.call_id, error_info{"server", "boom", 500, 1, {}}});
    CHECK(h.state().summary_call_id.empty());
    CHECK(h.history().of_kind("summary").empty());
    h.feed(answer(s.call_id, "answer r3"));
    h.ask("r4", "fourth");
    CHECK(all_of_type<summarize>(h.last.directives).size() == 1);
  }
}

TEST_CASE("a request can change the context policy for itself") {
  harness h = small_window(summarization::use_existing);
  turn(h, "r1");
  turn(h, "r2");
  query q{"r3", "t", "everything please", {}};
  q.overrides.context.keep_last_turns = 0;
  const llm_stream s = only<llm_stream>(h.feed(q));
  CHECK(s.messages.size() == 6);
  CHECK(!s.context.truncated);
}

namespace {

// One turn with a tool call (model → tool → model), the way `simulate` runs
// them. Returns how many summaries its model calls asked for; they are
// answered once the turn is over, as a summary written beside it would be.
int tool_turn(harness& h, int n) {
  const std::string id = "r" + std::to_string(n);
  std::vector<summarize> asked;
  auto collect = [&] {
    for (const directive& d : h.last.directives)
      if (const auto* s = std::get_if<summarize>(&d)) asked.push_back(*s);
  };
  const llm_stream first = h.ask(id, "question " + std::to_string(n));
  collect();
  const tool_exec exec = only<tool_exec>(h.feed(wants_tools(first.call_id, {call("tc" + id, "search", {{"q", id}})})));
  const llm_stream second = only<llm_stream>(h.feed(result_of(exec, json::value(std::string(160, 'v')))));
  collect();
  h.feed(answer(second.call_id, "answer " + std::to_string(n)));
  for (const summarize& s : asked) h.feed(answer(s.call_id, "summary up to seq " + std::to_string(s.to_seq)));
  return static_cast<int>(asked.size());
}

// Summary calls made in turns [from, to) of a conversation of `to` turns.
int summaries_at_steady_state(react_config c, int from, int to) {
  harness h(std::move(c));
  int made = 0;
  for (int n = 0; n < to; ++n) {
    const int asked = tool_turn(h, n);
    if (n >= from) made += asked;
  }
  return made;
}

}  // namespace

TEST_CASE("once the window is full, a summary leaves room for several turns before the next") {
  react_config c = config_with_tools({"search"});
  c.context.summaries = summarization::request_new;

  SECTION("a window bound by its token budget: at most one summary call per 4 turns") {
    c.context.keep_last_turns = 0;
    c.context.max_input_tokens = 1200;  // about 18 turns of this conversation
    c.context.reserve_output_tokens = 200;
    CHECK(summaries_at_steady_state(c, 40, 120) <= 80 / 4);
  }
  SECTION("a window bound by its number of turns: at most one summary call per 4 turns") {
    c.context.keep_last_turns = 8;
    CHECK(summaries_at_steady_state(c, 40, 120) <= 80 / 4);
  }
  SECTION("the default window with summaries requested (troupe --summarize): at most one per 4 turns") {
    c.context = summarizing(context_policy{});
    c.context.max_input_tokens = 4000;  // the default 6,000-token budget would fill only after ~90 turns
    CHECK(summaries_at_steady_state(c, 40, 120) <= 80 / 4);
    CHECK(summaries_at_steady_state(c, 40, 120) > 0);  // the window did overflow
  }
  SECTION("a turn limit given with summaries is kept, and bounds how far apart they can be") {
    c.context = summarizing(context_policy{}, 3);
    CHECK(c.context.keep_last_turns == 3);
    CHECK(summaries_at_steady_state(c, 40, 120) > 80 / 4);  // one per 3 turns: the rule docs/runtime.md gives
  }
  SECTION("summarize_to 1 summarises only what fell out: a summary on every turn") {
    c.context.keep_last_turns = 8;
    c.context.summarize_to = 1.0;
    CHECK(summaries_at_steady_state(c, 40, 120) == 80);
  }
}
