#include "simulation/report_json.hpp"

#include <boost/describe/class.hpp>
#include <boost/json/value_from.hpp>

namespace troupe {

// The members a report shows, in the order it shows them: Boost.JSON writes
// a described struct as an object of its described members, in this order.
BOOST_DESCRIBE_STRUCT(round_summary, (),
                      (round, hour, active, failed, refused, actions, input_tokens, output_tokens, cost, seconds,
                       latency_p50_ms, latency_p99_ms, world))
BOOST_DESCRIBE_STRUCT(scenario_report, (),
                      (name, agents, rounds, resumed_after, activations, activations_failed, errors_by_type, actions,
                       interviews, input_tokens, output_tokens, cost, seconds, spawn_seconds, activations_per_second))

boost::json::object scenario_report_json(const scenario_report& r, std::size_t peak_rss_bytes) {
  boost::json::object o = std::move(boost::json::value_from(r).as_object());
  o["peak_rss_bytes"] = peak_rss_bytes;
  o["stopped"] = r.stopped;
  o["per_round"] = boost::json::value_from(r.per_round);
  return o;
}

}  // namespace troupe
