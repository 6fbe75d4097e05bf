#include "actors/simulation.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("a simulation of 1,000 agents completes every turn") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 1'000, .turns = 3, .tools_per_turn = 2}, progress);
  CHECK(r.agents == 1'000);
  CHECK(r.turns_completed == 3'000);
  CHECK(r.turns_failed == 0);
  CHECK(r.llm_calls == 6'000);   // a tool turn and an answer per turn
  CHECK(r.tool_calls == 6'000);  // two per turn
  CHECK(r.seconds > 0);
  CHECK(r.turns_per_second > 0);
  CHECK(r.peak_rss_bytes > 0);
}

TEST_CASE("a simulation without tools answers at once") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 20, .turns = 2, .tools_per_turn = 0}, progress);
  CHECK(r.turns_completed == 40);
  CHECK(r.llm_calls == 40);
  CHECK(r.tool_calls == 0);
}
