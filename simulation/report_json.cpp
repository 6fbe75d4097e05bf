#include "simulation/report_json.hpp"

namespace troupe {

namespace {

boost::json::object counts_json(const std::map<std::string, std::size_t>& counts) {
  boost::json::object o;
  for (const auto& [k, n] : counts) o[k] = n;
  return o;
}

}  // namespace

boost::json::object scenario_report_json(const scenario_report& r, std::size_t peak_rss_bytes) {
  boost::json::array rounds;
  for (const auto& pr : r.per_round)
    rounds.push_back(boost::json::object{{"round", pr.round},
                                         {"hour", pr.hour},
                                         {"active", pr.active},
                                         {"failed", pr.failed},
                                         {"refused", pr.refused},
                                         {"actions", counts_json(pr.actions)},
                                         {"input_tokens", pr.input_tokens},
                                         {"output_tokens", pr.output_tokens},
                                         {"cost", pr.cost},
                                         {"seconds", pr.seconds},
                                         {"latency_p50_ms", pr.latency_p50_ms},
                                         {"latency_p99_ms", pr.latency_p99_ms},
                                         {"world", pr.world}});
  return boost::json::object{{"name", r.name},
                             {"agents", r.agents},
                             {"rounds", r.rounds},
                             {"resumed_after", r.resumed_after},
                             {"activations", r.activations},
                             {"activations_failed", r.activations_failed},
                             {"errors_by_type", counts_json(r.errors_by_type)},
                             {"actions", counts_json(r.actions)},
                             {"interviews", r.interviews},
                             {"input_tokens", r.input_tokens},
                             {"output_tokens", r.output_tokens},
                             {"cost", r.cost},
                             {"seconds", r.seconds},
                             {"spawn_seconds", r.spawn_seconds},
                             {"activations_per_second", r.activations_per_second},
                             {"peak_rss_bytes", peak_rss_bytes},
                             {"stopped", r.stopped},
                             {"per_round", std::move(rounds)}};
}

}  // namespace troupe
