#pragma once
// A scenario run's figures as `troupe simulate --scenario --json` prints
// them: the run's totals, then one object per round.

#include "simulation/run_scenario.hpp"

#include <boost/json/object.hpp>

#include <cstddef>

namespace troupe {

// `peak_rss_bytes` is the process's, which the report does not hold.
boost::json::object scenario_report_json(const scenario_report& r, std::size_t peak_rss_bytes);

}  // namespace troupe
