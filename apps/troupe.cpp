// The troupe command. Subcommands:
//   troupe simulate --agents N --turns M [--tools-per-turn K] [--json]

#include "actors/simulation.hpp"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace {

int simulate(const troupe::simulation_options& options, bool as_json) {
  troupe::simulation_progress progress;
  const bool show_progress = !as_json && isatty(STDERR_FILENO);
  const std::size_t total = options.agents * options.turns;
  auto tick = [&] {
    if (!show_progress) return;
    std::fprintf(stderr, "\r%zu / %zu turns completed, %zu failed", progress.completed.load(), total,
                 progress.failed.load());
  };
  const troupe::simulation_report r = troupe::run_simulation(options, progress, tick);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"troupe: many LLM agents as actors, running at once, safely and fast."};
  app.require_subcommand(1);

  troupe::simulation_options sim;
  bool sim_json = false;
  CLI::App* simulate_cmd = app.add_subcommand(
      "simulate", "Run N agents for M ReAct turns each, all at once, with a scripted model.");
  simulate_cmd->add_option("--agents", sim.agents, "How many agents")->required()->check(CLI::PositiveNumber);
  simulate_cmd->add_option("--turns", sim.turns, "Turns per agent")->required()->check(CLI::NonNegativeNumber);
  simulate_cmd->add_option("--tools-per-turn", sim.tools_per_turn, "Tool calls the model makes per turn")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  simulate_cmd->add_option("--threads", sim.scheduler_threads, "Scheduler threads (0: one per core)")
      ->capture_default_str();
  simulate_cmd->add_flag("--json", sim_json, "Print one JSON object with the totals instead of text");

  CLI11_PARSE(app, argc, argv);
  try {
    if (simulate_cmd->parsed()) return simulate(sim, sim_json);
  } catch (const std::exception& e) {
    std::cerr << "troupe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
