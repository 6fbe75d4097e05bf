#pragma once
// A small run's report, as the runner would return it for the event log in
// fixtures/small_run.jsonl (three rounds of six agents), for the report's
// unit tests and the page the browser test opens.

#include "simulation/run_scenario.hpp"

#include <string>

namespace troupe::testing {

inline std::string small_run_log() { return std::string(TROUPE_SIMULATION_FIXTURES) + "/small_run.jsonl"; }

inline scenario_report small_run_report() {
  scenario_report r;
  r.name = "town <square>";
  r.agents = 6;
  r.rounds = 3;
  r.activations = 13;
  r.activations_failed = 1;
  r.errors_by_type = {{"timeout", 1}};
  r.actions = {{"post", 3}, {"repost", 7}};
  r.interviews = 2;
  r.input_tokens = 1'234'567;
  r.output_tokens = 144;
  r.cost = 1.2346;
  r.seconds = 4.5;
  r.spawn_seconds = 0.25;
  r.activations_per_second = 3.25;
  const auto round = [](std::int64_t n, int hour, std::size_t active, std::size_t failed,
                        std::map<std::string, std::size_t> actions, std::int64_t in, double cost, double p50,
                        double p99, std::int64_t posts) {
    round_summary s;
    s.round = n;
    s.hour = hour;
    s.active = active;
    s.failed = failed;
    s.actions = std::move(actions);
    s.refused = n == 1 ? 1 : 0;
    s.input_tokens = in;
    s.output_tokens = 12 * static_cast<std::int64_t>(active);
    s.cost = cost;
    s.seconds = 1.5;
    s.latency_p50_ms = p50;
    s.latency_p99_ms = p99;
    s.world = boost::json::object{{"posts", posts}};
    return s;
  };
  r.per_round = {round(1, 8, 6, 1, {{"post", 2}}, 470, 0.5, 80, 120000, 2),
                 round(2, 9, 3, 0, {{"post", 1}, {"repost", 3}}, 360, 0.4, 95, 210, 6),
                 round(3, 10, 4, 0, {{"repost", 4}}, 1'233'737, 0.3346, 70, 150, 10)};
  return r;
}

}  // namespace troupe::testing
