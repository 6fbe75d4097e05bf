// troupe simulate --scenario FILE: a scenario's agents acting together in a
// world, round by round (simulation/run_scenario.hpp).

#include "apps/commands.hpp"
#include "json/json_text.hpp"
#include "runtime/tools/builtin_tools.hpp"
#include "simulation/activation.hpp"
#include "simulation/estimate.hpp"
#include "simulation/html_report.hpp"
#include "simulation/report_json.hpp"
#include "simulation/run_scenario.hpp"
#include "simulation/scenario_toml.hpp"

#include <boost/json.hpp>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

namespace troupe::cli {

namespace {

std::atomic<bool> stop_requested{false};
void on_sigint(int) { stop_requested = true; }

// Prints the progress line every 200 ms while the run goes, on a terminal.
class progress_line {
 public:
  progress_line(const scenario_progress& p, std::int64_t rounds) : p_(p), rounds_(rounds) {
    if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { loop(); });
  }
  ~progress_line() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::fprintf(stderr, "\r%130s\r", "");
  }

 private:
  void loop() {
    std::unique_lock lock(m_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; }))
      std::fprintf(stderr,
                   "\rround %lld/%lld, %zu active, %zu activations done (%zu failed), %zu actions, %lld tokens, "
                   "$%.4f, RSS %.0f MiB  ",
                   static_cast<long long>(p_.round.load()), static_cast<long long>(rounds_), p_.active.load(),
                   p_.activations_done.load(), p_.activations_failed.load(), p_.actions.load(),
                   static_cast<long long>(p_.input_tokens.load() + p_.output_tokens.load()),
                   static_cast<double>(p_.cost_microdollars.load()) / 1e6,
                   static_cast<double>(current_rss_bytes()) / (1024 * 1024));
  }

  const scenario_progress& p_;
  std::int64_t rounds_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int run_scenario_command(const scenario_command_options& o, const model_options& model) {
  scenario s = read_scenario(o.scenario);
  if (o.seed) s.seed = *o.seed;
  if (o.estimate) {
    estimate_inputs in;
    in.world_actions = scenario_actions(s);
    for (const tool& t : builtin_tools()) in.other_tools.push_back(t.spec);
    const scenario_estimate e = estimate_scenario(s, in);
    if (o.json)
      std::cout << json_text(estimate_json(e)) << "\n";
    else
      std::cout << format_estimate(e);
    return 0;
  }
  if (o.resume && (o.store.empty() || o.store.rfind("memory:", 0) == 0))
    throw usage_error(
        "--resume continues a run kept in a durable store: name it with --store sqlite:PATH or "
        "--store postgres://…");
  scenario_run_options run;
  // In memory, the run keeps its agents' threads in a store of its own, in
  // the compact form (run_scenario.hpp).
  if (!o.store.empty() && o.store != "memory:") run.store = store_for(o.store, "memory:").threads;
  run.event_log = o.events;
  run.resume = o.resume;
  run.scheduler_threads = o.threads;
  if (names_a_model(model)) run.provider = resolve_model(model).provider;
  run.stop = &stop_requested;
  std::signal(SIGINT, on_sigint);

  scenario_progress progress;
  scenario_report r;
  {
    progress_line line(progress, total_rounds(s));
    r = run_scenario(s, run, progress);
  }
  if (r.finished_before) {
    // The log and the store already hold the whole run: nothing is run or rewritten.
    std::printf("%s: the run had already finished (%lld rounds); nothing to resume\n", r.name.c_str(),
                static_cast<long long>(r.rounds));
    return 0;
  }
  if (!o.report.empty()) write_html_report(r, o.events, o.report);
  const double peak_mib = static_cast<double>(peak_rss_bytes()) / (1024 * 1024);
  if (o.json) {
    std::cout << json_text(scenario_report_json(r, peak_rss_bytes())) << "\n";
  } else {
    std::printf(
        "%s: %zu agents, %lld rounds%s, %zu activations (%zu failed), %zu interview answers in %.2f s "
        "(%.0f activations/s)\n",
        r.name.c_str(), r.agents, static_cast<long long>(r.rounds), r.stopped ? " (stopped early)" : "", r.activations,
        r.activations_failed, r.interviews, r.seconds, r.activations_per_second);
    if (r.resumed_after) std::printf("resumed after round %lld\n", static_cast<long long>(r.resumed_after));
    std::string actions;
    for (const auto& [k, n] : r.actions) actions += " " + k + " " + std::to_string(n) + ",";
    if (!actions.empty()) actions.pop_back();
    std::printf("actions:%s\n", actions.empty() ? " none" : actions.c_str());
    std::printf("%lld tokens in, %lld out, $%.4f; agents spawned in %.2f s; peak RSS %.1f MiB\n",
                static_cast<long long>(r.input_tokens), static_cast<long long>(r.output_tokens), r.cost,
                r.spawn_seconds, peak_mib);
    for (const auto& [type, n] : r.errors_by_type) std::printf("  %zu activations failed with %s\n", n, type.c_str());
  }
  return r.stopped ? 1 : 0;
}

}  // namespace troupe::cli
