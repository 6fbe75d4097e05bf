#pragma once
// A run of a scenario as one self-contained HTML page (`troupe simulate
// --scenario F --report FILE.html`): charts per round of the actions by
// kind, the active agents, tokens, cost and latency, drawn as inline SVG;
// the totals and the errors by type; the interviews; and how the most
// reposted posts spread through the graph. Nothing outside the page is
// loaded (no script, font, style sheet or image), so it opens anywhere and
// can be mailed as it is. Every text that came from the log or the scenario
// is escaped.

#include "simulation/event_log_digest.hpp"
#include "simulation/run_scenario.hpp"

#include <stdexcept>
#include <string>

namespace troupe {

// The page could not be written (the message names the file).
struct report_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The page, from the run's report and what its event log adds (null: the
// run kept no log, and the page says what it cannot show).
std::string html_report(const scenario_report& report, const event_log_digest* log);

// Reads the event log (empty path: none) as a stream and writes the page to
// `out_path`. Throws event_log_error or report_error.
void write_html_report(const scenario_report& report, const std::string& event_log_path, const std::string& out_path);

}  // namespace troupe
