#include "apps/commands.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace troupe::cli {

int run_simulate(const simulation_options& options, bool as_json) {
  simulation_progress progress;
  const bool show_progress = !as_json && isatty(STDERR_FILENO);
  const std::size_t total = options.agents * options.turns;
  auto tick = [&] {
    if (!show_progress) return;
    std::fprintf(stderr, "\r%zu / %zu turns completed, %zu failed", progress.completed.load(), total,
                 progress.failed.load());
  };
  const simulation_report r = run_simulation(options, progress, tick);
  if (show_progress) std::fprintf(stderr, "\r%80s\r", "");

  if (as_json) {
    std::cout << boost::json::serialize(boost::json::object{
                     {"agents", r.agents},
                     {"turns_completed", r.turns_completed},
                     {"turns_failed", r.turns_failed},
                     {"seconds", r.seconds},
                     {"turns_per_second", r.turns_per_second},
                     {"peak_rss_bytes", r.peak_rss_bytes},
                     {"rss_bytes_per_agent", r.rss_bytes_per_agent},
                     {"llm_calls", r.llm_calls},
                     {"tool_calls", r.tool_calls}})
              << "\n";
  } else {
    std::printf("%zu agents, %zu turns completed, %zu failed in %.2f s (%.0f turns/s)\n", r.agents,
                r.turns_completed, r.turns_failed, r.seconds, r.turns_per_second);
    std::printf("%zu model calls, %zu tool calls; peak RSS %.1f MiB, %zu bytes per agent\n", r.llm_calls,
                r.tool_calls, static_cast<double>(r.peak_rss_bytes) / (1024 * 1024), r.rss_bytes_per_agent);
  }
  return r.turns_failed == 0 ? 0 : 1;
}

}  // namespace troupe::cli
