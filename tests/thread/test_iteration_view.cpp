#include "support/react_harness.hpp"

#include "thread/iteration_view.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("a request's entries grouped by iteration") {
  harness h;
  llm_stream s = h.ask("r1", "go");
  const auto execs = all_of_type<tool_exec>(h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "lookup")})));
  h.feed(result_of(execs[0], 1));

  SECTION("while tools run, iteration 1 is in progress with a pending call") {
    const auto its = iterations_of(h.history(), "r1");
    REQUIRE(its.size() == 1);
    CHECK(its[0].number == 1);
    CHECK(its[0].messages.size() == 1);
    REQUIRE(its[0].tool_calls.size() == 2);
    CHECK(its[0].tool_calls[0].result == nullptr);  // results are committed together
    CHECK(!its[0].completed_at);
  }

  h.feed(result_of(execs[1], 2));
  s = std::get<llm_stream>(h.last.directives.front());

  SECTION("once the next model call starts, iteration 1 is complete with paired results") {
    const auto its = iterations_of(h.history(), "r1");
    REQUIRE(its.size() == 1);  // iteration 2 has no entries yet
    REQUIRE(its[0].tool_calls.size() == 2);
    CHECK(its[0].tool_calls[1].result->payload.at("result") == 2);
    CHECK(its[0].completed_at == its[0].tool_calls[1].result->at);
  }

  h.feed(answer(s.call_id, "done"));

  SECTION("after the answer both iterations are complete, with their times") {
    const auto its = iterations_of(h.history(), "r1");
    REQUIRE(its.size() == 2);
    CHECK(its[0].completed_at.has_value());
    CHECK(its[1].number == 2);
    REQUIRE(its[1].messages.size() == 1);
    CHECK(its[1].messages[0]->payload.at("content") == "done");
    CHECK(its[1].started_at >= *its[0].completed_at);
    CHECK(its[1].completed_at == h.history().last()->at);
  }
  SECTION("another request's entries are not mixed in") {
    s = h.ask("r2", "again");
    CHECK(iterations_of(h.history(), "r2").size() == 1);
    CHECK(iterations_of(h.history(), "r1").size() == 2);
    CHECK(iterations_of(h.history(), "nope").empty());
  }
}

TEST_CASE("an iteration that ended in an error is complete") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  h.feed(llm_result{s.call_id, error_info{"server", "boom", 500, 1, {}}});
  const auto its = iterations_of(h.history(), "r1");
  REQUIRE(its.size() == 1);
  CHECK(its[0].others.size() == 1);
  CHECK(its[0].completed_at.has_value());
}
