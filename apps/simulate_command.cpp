#include "apps/commands.hpp"
#include "json/json_text.hpp"

#include <boost/json.hpp>

#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

namespace troupe::cli {

namespace {

std::atomic<bool> stop_requested{false};
void on_sigint(int) { stop_requested = true; }

boost::json::object latency_json(const latency_summary& s, bool all) {
  boost::json::object o{{"p50", s.p50}, {"p99", s.p99}};
  if (all) {
    o["p90"] = s.p90;
    o["max"] = s.max;
  }
  return o;
}

}  // namespace

int run_simulate(simulation_options options, const model_options& model, const std::string& store, bool as_json) {
  options.store = store_for(store, "memory:").threads;
  if (names_a_model(model)) {
    resolved_model m = resolve_model(model);
    options.provider = m.provider;
    options.model = m.model;
    options.system_prompt = model.system;
    options.tools = model.tools;
    options.add_tools = [servers = mcp_servers_for(model)](runtime& rt) { return add_mcp_servers(rt, servers); };
    options.turn_timeout_seconds = model.timeout_seconds;
    options.max_iterations = model.max_iterations;
    options.context = policy_for(model, m.model);
  }
  // Ctrl-C ends the run early; the totals so far are still printed.
  options.stop = &stop_requested;
  std::signal(SIGINT, on_sigint);

  simulation_progress progress;
  // Only for a person watching: a terminal, whatever stdout is.
  const bool show_progress = isatty(STDERR_FILENO);
  const std::size_t total = options.agents * options.turns;
  auto last_tick = std::chrono::steady_clock::now();
  std::size_t last_done = 0;
  double turns_per_second = 0;
  auto tick = [&] {
    if (!show_progress) return;
    const auto now = std::chrono::steady_clock::now();
    const std::size_t done = progress.completed.load() + progress.failed.load();
    const double dt = std::chrono::duration<double>(now - last_tick).count();
    if (dt >= 0.5) {  // steadier than the rate of one 200 ms tick
      turns_per_second = static_cast<double>(done - last_done) / dt;
      last_tick = now;
      last_done = done;
    }
    std::fprintf(stderr, "\r%zu / %zu agents spawned, %zu / %zu turns done (%zu failed), %.0f turns/s, RSS %.0f MiB  ",
                 progress.spawned.load(), options.agents, done, total, progress.failed.load(), turns_per_second,
                 static_cast<double>(current_rss_bytes()) / (1024 * 1024));
  };
  const simulation_report r = run_simulation(options, progress, tick);
  if (show_progress) std::fprintf(stderr, "\r%120s\r", "");

  if (as_json) {
    boost::json::object errors;
    if (r.calls_without_usage)
      std::printf("%lld model calls reported no usage: their tokens are not counted\n",
                  static_cast<long long>(r.calls_without_usage));
    for (const auto& [type, n] : r.errors_by_type) errors[type] = n;
    boost::json::object out{{"agents", r.agents},
                            {"turns_completed", r.turns_completed},
                            {"turns_failed", r.turns_failed},
                            {"stopped", r.stopped},
                            {"seconds", r.seconds},
                            {"turns_per_second", r.turns_per_second},
                            {"peak_rss_bytes", r.peak_rss_bytes},
                            {"rss_bytes_per_agent", r.rss_bytes_per_agent},
                            {"spawn_seconds", r.spawn_seconds},
                            {"teardown_seconds", r.teardown_seconds},
                            {"llm_calls", r.llm_calls},
                            {"tool_calls", r.tool_calls},
                            {"turn_latency_ms", latency_json(r.turn_latency, true)},
                            {"troupe_ms_per_turn", latency_json(r.own_time, true)},
                            {"errors_by_type", std::move(errors)},
                            {"retries", r.retries},
                            {"input_tokens", r.input_tokens},
                            {"output_tokens", r.output_tokens},
                            {"calls_without_usage", r.calls_without_usage}};
    if (r.heap_bytes_per_agent) out["heap_bytes_per_agent"] = *r.heap_bytes_per_agent;
    if (r.store_batching) {
      out["store_commits"] = r.store_batching->commits;
      out["store_transactions"] = r.store_batching->transactions;
    }
    if (r.first_token.samples) out["first_token_ms"] = latency_json(r.first_token, false);
    std::cout << json_text(out) << "\n";
  } else {
    std::printf("%zu agents, %zu turns completed, %zu failed%s in %.2f s (%.0f turns/s)\n", r.agents, r.turns_completed,
                r.turns_failed, r.stopped ? " (stopped early)" : "", r.seconds, r.turns_per_second);
    std::printf("agents spawned in %.2f s, shut down in %.2f s; %zu bytes of memory per agent after the run\n",
                r.spawn_seconds, r.teardown_seconds, r.rss_bytes_per_agent);
    std::printf("turn latency p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; troupe's own share p50 %.2f ms\n",
                r.turn_latency.p50, r.turn_latency.p90, r.turn_latency.p99, r.turn_latency.max, r.own_time.p50);
    if (r.first_token.samples)
      std::printf("first token p50 %.1f ms, p99 %.1f ms\n", r.first_token.p50, r.first_token.p99);
    std::printf("%zu model calls, %zu tool calls, %zu retries, %lld tokens in, %lld out; peak RSS %.1f MiB\n",
                r.llm_calls, r.tool_calls, r.retries, static_cast<long long>(r.input_tokens),
                static_cast<long long>(r.output_tokens), static_cast<double>(r.peak_rss_bytes) / (1024 * 1024));
    if (r.store_batching && r.store_batching->transactions)
      std::printf("%llu commits in %llu transactions (%.1f per transaction)\n",
                  static_cast<unsigned long long>(r.store_batching->commits),
                  static_cast<unsigned long long>(r.store_batching->transactions),
                  static_cast<double>(r.store_batching->commits) / static_cast<double>(r.store_batching->transactions));
    for (const auto& [type, n] : r.errors_by_type) std::printf("  %zu failed with %s\n", n, type.c_str());
  }
  return r.turns_failed == 0 && !r.stopped ? 0 : 1;
}

}  // namespace troupe::cli
