#include "support/react_harness.hpp"

#include "strategy/react_state.hpp"

#include <boost/json.hpp>
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {
react_state round_trip(const react_state& s) {
  auto back = decode_react_state(json::parse(json::serialize(to_json(s))));
  REQUIRE(back);
  return *back;
}
}  // namespace

TEST_CASE("the machine state survives a JSON round trip in every status") {
  harness h;
  CHECK(round_trip(h.state()) == h.state());

  query q{"r1", "t", "go", {}};
  q.overrides.model = "m2";
  q.overrides.params.temperature = 0.5;
  llm_stream s = only<llm_stream>(h.feed(q));
  h.feed(llm_delta{s.call_id, "part", "think"});
  CHECK(round_trip(h.state()) == h.state());

  const auto execs = all_of_type<tool_exec>(
      h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "nope")}, token_usage{5, 6})));
  CHECK(h.state().status == react_status::awaiting_tools);
  CHECK(round_trip(h.state()) == h.state());  // one call pending, one answered with an error

  s = only<llm_stream>(h.feed(result_of(execs[0], json::object{{"x", json::array{1, "two"}}})));
  h.feed(llm_result{s.call_id, error_info{"overloaded", "busy", 529, 2, 1.5}});
  CHECK(h.state().status == react_status::error);
  CHECK(round_trip(h.state()) == h.state());
}

TEST_CASE("a decoded state continues where the original left off") {
  harness a;
  const llm_stream s = a.ask("r1", "go");
  auto restored = decode_react_state(to_json(a.state()));
  REQUIRE(restored);
  react_thread copy(a.history(), *restored);
  const auto out = copy.apply(a.config, answer(s.call_id, "done"), 5000, a.ids);
  CHECK(only<reply>(out.directives).ok());
}

TEST_CASE("decoding a machine state names the bad field") {
  json::value v = to_json(react_state{});
  SECTION("an unknown status") {
    v.as_object()["status"] = "sleeping";
    CHECK(decode_react_state(v).error().field == "status");
  }
  SECTION("a malformed pending tool call") {
    v.as_object()["tool_calls"] = json::array{json::object{{"call", json::object{{"id", "a"}}}}};
    CHECK(decode_react_state(v).error().field == "tool_calls[0].call.name");
  }
  SECTION("negative usage") {
    v.as_object()["thread_usage"] = json::object{{"input_tokens", -1}, {"output_tokens", 0}};
    CHECK(decode_react_state(v).error().field == "thread_usage.input_tokens");
  }
}

TEST_CASE("the agent's context overrides and a summary in flight survive the round trip") {
  react_state s;
  context_overrides own;
  own.keep_last_turns = 4;
  own.summarize = true;
  s.context = own;
  s.summary_call_id = "summary-1";
  s.summary_to_seq = 17;
  const react_state back = round_trip(s);
  CHECK(back.context == s.context);
  CHECK(back.context->keep_last_turns == 4);
  CHECK(back.summary_call_id == "summary-1");
  CHECK(back.summary_to_seq == 17);
  json::value bad = to_json(s);
  bad.as_object()["context"].as_object()["keep_last_turns"] = -1;
  CHECK(decode_react_state(bad).error().field == "context.keep_last_turns");
}
