// Scenario runs at scale: N agents on a Barabási–Albert graph (m = 3), every
// agent activated every round, the scripted social policy, the run's own
// in-memory store (compact: run_scenario.cpp),
// as `troupe simulate --scenario` runs them. Per size: activations per
// second (wall, over the rounds), CPU µs per activation (the process's CPU
// over the rounds, every thread, divided by the activations), peak RSS and
// RSS per agent, and the world's share (observe, check and apply, timed
// around the world's calls), with the CPU per activation as a ratio of the
// 10,000-agent run's in the same invocation, and how many cores the run
// kept busy (its threads' CPU time over the wall time, from the first
// round's start to the last answer) and wanted (that plus the time its
// threads waited, runnable, for a core that another program held). Each run
// is a process of its own; medians of --repeat runs.
//
// --mock: 10,000 agents × 10 rounds whose group calls a local
// OpenAI-compatible mock (bench/mock_model_server.hpp) answering after
// --latency-us through one endpoint capped at --cap calls, against a plain
// load client (the HTTP provider in a closed loop of --cap calls) on the
// same kind of mock: model calls per second and their ratio.
//
//   build/bench/simulation_bench [--repeat 3] [--rounds 5] [--concurrency 1000] [--million]
//                                [--event-log] [--rss-limit-gb 14] [--agents N]
//   build/bench/simulation_bench --mock [--agents 10000] [--rounds 10] [--cap 32] [--latency-us 5000]

#include "bench/bench_support.hpp"
#include "bench/closed_loop.hpp"
#include "bench/mock_model_server.hpp"
#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/net/http_client.hpp"
#include "simulation/run_scenario.hpp"
#include "world/social_world.hpp"

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;
using troupe::bench::process_cpu_seconds;
using clk = std::chrono::steady_clock;

namespace {

bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

double status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, n, field) == 0) return std::stod(line.substr(n)) * 1024;
  return 0;
}

// Resident bytes now, from /proc/self/statm: the watch below reads it every
// 2 ms, and /proc/self/status (which formats fifty lines) would cost the
// run a share of its CPU.
double rss_now() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Nanoseconds every thread of the process has run and has waited to run,
// runnable, for a core (/proc/self/task/N/schedstat): their sum over a
// stretch of wall time is how many cores the run used and how many it
// could have used, had other programs not taken them.
struct sched_time {
  double run_ns = 0, wait_ns = 0;
};

sched_time threads_sched_time() {
  sched_time out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "schedstat");
    double run = 0, wait = 0;
    if (f >> run >> wait) {
      out.run_ns += run;
      out.wait_ns += wait;
    }
  }
  return out;
}

// The social world, its calls timed (wall time on the calling thread: the
// calls are short, and a thread CPU clock costs a system call each).
class timed_world final : public world {
 public:
  explicit timed_world(std::unique_ptr<world> inner) : inner_(std::move(inner)) {}
  void populate(const std::vector<std::string>& ids) override { inner_->populate(ids); }
  std::vector<tool_spec> actions() const override { return inner_->actions(); }
  boost::json::value check(const world_action& a) const override {
    const auto t = clk::now();
    auto out = inner_->check(a);
    ns_ += (clk::now() - t).count();
    return out;
  }
  world_observation observe(std::uint32_t agent, std::int64_t round) const override {
    const auto t = clk::now();
    auto out = inner_->observe(agent, round);
    ns_ += (clk::now() - t).count();
    return out;
  }
  void apply(std::int64_t round, const std::vector<std::uint32_t>& activated,
             const std::vector<world_action>& actions) override {
    const auto t = clk::now();
    inner_->apply(round, activated, actions);
    ns_ += (clk::now() - t).count();
  }
  std::vector<std::uint32_t> reached() const override { return inner_->reached(); }
  boost::json::object round_figures() const override { return inner_->round_figures(); }

  static std::atomic<std::int64_t> ns_;

 private:
  std::unique_ptr<world> inner_;
};
std::atomic<std::int64_t> timed_world::ns_{0};

scenario bench_scenario(std::size_t agents, std::int64_t rounds, std::size_t concurrency) {
  scenario s;
  s.name = "bench";
  s.seed = 5;
  population_group g;
  g.name = "people";
  g.count = agents;
  g.policy.weights = {{"post", 1},     {"like", 2},           {"repost", 0.5},    {"reply", 0.5},
                      {"follow", 0.2}, {"send_message", 0.2}, {"do_nothing", 1.5}};
  s.groups.push_back(std::move(g));
  s.world.kind = "timed_social";
  s.world.graph.kind = graph_kind::barabasi_albert;
  s.world.graph.m = 3;
  s.clock.mode = activation_mode::every_round;
  s.workflow = {run_rounds{rounds}};
  s.concurrency = concurrency;
  return s;
}

scenario_run_options timed_options(const scenario&) {
  scenario_run_options o;
  o.worlds["timed_social"] = [](const scenario& sc) {
    return std::make_unique<timed_world>(std::make_unique<social_world>(sc.world, sc.seed));
  };
  o.policies["timed_social"] = social_policy;
  return o;
}

// Runs the scenario, stopping it when RSS passes `rss_limit` bytes. Returns
// {activations/s, CPU µs/activation, peak RSS, activations, failed, world
// µs/activation, rounds run, spawn s, stopped}.
std::vector<double> scale_run(std::size_t agents, std::int64_t rounds, std::size_t concurrency, bool event_log,
                              double rss_limit) {
  scenario s = bench_scenario(agents, rounds, concurrency);
  scenario_run_options o = timed_options(s);
  std::string log_path;
  if (event_log) {
    log_path =
        (std::filesystem::temp_directory_path() / ("simulation_bench." + std::to_string(getpid()) + ".jsonl")).string();
    o.event_log = log_path;
  }
  std::atomic<bool> stop{false}, done{false};
  o.stop = &stop;
  scenario_progress progress;
  // CPU from the first round's start: spawning the agents and building the
  // graph are not an activation's cost.
  std::atomic<double> cpu_at_round1{-1};
  std::atomic<std::int64_t> world_ns_at_round1{0};
  // From the first round's start to the last activation's answer (the last
  // round's close, the world's apply, comes after): the threads' time.
  sched_time sched_first, sched_last;
  clk::time_point wall_first, wall_last;
  bool sched_done = false;
  const std::uint64_t all_activations = static_cast<std::uint64_t>(agents) * static_cast<std::uint64_t>(rounds);
  std::thread watch([&] {
    while (!done.load()) {
      if (cpu_at_round1.load() < 0 && progress.round.load() >= 1) {
        cpu_at_round1 = process_cpu_seconds();
        world_ns_at_round1 = timed_world::ns_.load();
        sched_first = threads_sched_time();
        wall_first = clk::now();
      }
      if (!sched_done && progress.activations_done.load() >= all_activations) {
        sched_last = threads_sched_time();
        wall_last = clk::now();
        sched_done = true;
      }
      if (rss_now() > rss_limit) stop = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const scenario_report r = run_scenario(s, o, progress);
  const double cpu_end = process_cpu_seconds();
  done = true;
  watch.join();
  if (!log_path.empty()) std::filesystem::remove(log_path);
  const auto n = static_cast<double>(r.activations);
  const double sched_wall_ns = sched_done ? static_cast<double>((wall_last - wall_first).count()) : 0;
  return {r.activations_per_second,
          n > 0 ? (cpu_end - cpu_at_round1.load()) * 1e6 / n : 0,
          status_bytes("VmHWM:"),
          n,
          static_cast<double>(r.activations_failed),
          n > 0 ? static_cast<double>(timed_world::ns_.load() - world_ns_at_round1.load()) / 1e3 / n : 0,
          static_cast<double>(r.rounds),
          r.spawn_seconds,
          r.stopped ? 1.0 : 0.0,
          sched_wall_ns > 0 ? (sched_last.run_ns - sched_first.run_ns) / sched_wall_ns : 0,
          sched_wall_ns > 0
              ? (sched_last.run_ns - sched_first.run_ns + sched_last.wait_ns - sched_first.wait_ns) / sched_wall_ns
              : 0};
}

int scale(int argc, char** argv) {
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  const auto rounds = static_cast<std::int64_t>(flag(argc, argv, "--rounds", 5));
  const std::size_t concurrency = flag(argc, argv, "--concurrency", 1000);
  const bool event_log = has_flag(argc, argv, "--event-log");
  const double rss_limit = static_cast<double>(flag(argc, argv, "--rss-limit-gb", 14)) * 1e9;
  std::vector<std::size_t> sizes{10'000, 100'000};
  if (has_flag(argc, argv, "--million")) sizes.push_back(1'000'000);
  // One size alone, once, in this process (for a profiler, which need not
  // follow a fork): no ratio to 10,000.
  const std::size_t only = flag(argc, argv, "--agents", 0);
  const bool in_process = only > 0 && repeat == 1;
  if (only > 0) sizes = {only};
  std::printf(
      "BA m=3, every agent every round, %lld rounds, scripted, concurrency %zu, in-memory store, %s; medians of "
      "%zu runs\n",
      static_cast<long long>(rounds), concurrency, event_log ? "event log to a temp file" : "no event log", repeat);
  std::printf("%9s %12s %9s %8s %10s %12s %9s %9s %8s %7s %6s %7s\n", "agents", "activations", "act/s", "CPU µs",
              "CPU ratio", "world µs/act", "peak RSS", "KB/agent", "spawn s", "failed", "cores", "wanted");
  double cpu_10k = 0;
  for (const std::size_t agents : sizes) {
    std::vector<std::vector<double>> runs;
    const std::size_t k = agents >= 1'000'000 ? 1 : repeat;
    auto run = [&] { return scale_run(agents, rounds, concurrency, event_log, rss_limit); };
    for (std::size_t i = 0; i < k; ++i) runs.push_back(in_process ? run() : in_child(run));
    auto col = [&](std::size_t c) {
      std::vector<double> v;
      for (const auto& r : runs)
        if (r.size() > c) v.push_back(r[c]);
      return median(v);
    };
    if (agents == 10'000) cpu_10k = col(1);
    std::printf("%9zu %12.0f %9.0f %8.1f %10.2f %12.1f %7.2f GB %9.2f %8.1f %7.0f %6.2f %7.2f%s\n", agents, col(3),
                col(0), col(1), cpu_10k > 0 ? col(1) / cpu_10k : 0, col(5), col(2) / 1e9,
                col(2) / 1e3 / static_cast<double>(agents), col(7), col(4), col(9), col(10),
                col(8) > 0 ? "  (stopped at the RSS limit)" : "");
    if (col(8) > 0) std::printf("          stopped after %.0f rounds\n", col(6));
    std::fflush(stdout);
  }
  return 0;
}

// The mock's answers: a call whose last message is a tool result gets a
// line of text; any other, a call of the world's `post`.
const char* tool_call_answer =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":"
    "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"post\",\"arguments\":\"{\\\"text\\\":\\\"Hello.\\\"}\"}}"
    "]},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":200,\"completion_tokens\":10}}\n\ndata: [DONE]\n\n";

const std::string& social_answer(const std::string& body) {
  static const std::string text = bench::short_answer, call = tool_call_answer;
  const auto at = body.rfind("\"role\":\"");
  return at != std::string::npos && body.compare(at + 8, 5, "tool\"") == 0 ? text : call;
}

// {model calls/s over the rounds, calls, failed activations, CPU µs a call}
std::vector<double> mock_scenario_run(std::size_t agents, std::int64_t rounds, std::size_t cap,
                                      std::chrono::microseconds latency) {
  bench::mock_model_server mock(latency, social_answer);
  scenario s = bench_scenario(agents, rounds, 1000);
  s.world.kind = "social";
  s.groups[0].model = "local";
  s.groups[0].endpoints = {model_endpoint{mock.base_url(), "", cap}};
  scenario_run_options o;
  scenario_progress progress;
  std::atomic<bool> done{false};
  std::atomic<double> cpu_at_round1{-1};
  std::atomic<std::uint64_t> calls_at_round1{0};
  std::thread watch([&] {
    while (!done.load() && cpu_at_round1.load() < 0) {
      if (progress.round.load() >= 1) {
        cpu_at_round1 = process_cpu_seconds();
        calls_at_round1 = mock.requests();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const scenario_report r = run_scenario(s, o, progress);
  const double cpu = process_cpu_seconds() - cpu_at_round1.load();
  done = true;
  watch.join();
  double seconds = 0;
  for (const auto& round : r.per_round) seconds += round.seconds;
  const auto calls = static_cast<double>(mock.requests() - calls_at_round1.load());
  return {calls / seconds, calls, static_cast<double>(r.activations_failed), cpu * 1e6 / calls};
}

// A plain load client: the HTTP provider keeping `cap` calls going.
std::vector<double> mock_load_run(std::size_t calls, std::size_t cap, std::chrono::microseconds latency) {
  bench::mock_model_server mock(latency);
  http_llm_provider provider(http_options_for(mock.base_url(), "", bench::no_retries()),
                             std::make_shared<http_client>());
  bench::finish_line finish;
  std::atomic<std::size_t> started{0};
  bench::closed_loop loop{provider, started, calls, finish};
  const double cpu0 = process_cpu_seconds();
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < cap; ++i) loop.next();
  finish.wait_for(calls);
  const double seconds = std::chrono::duration<double>(clk::now() - t0).count();
  const double cpu = process_cpu_seconds() - cpu0;
  return {static_cast<double>(calls) / seconds, static_cast<double>(calls), static_cast<double>(finish.failed),
          cpu * 1e6 / static_cast<double>(calls)};
}

int mock(int argc, char** argv) {
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  const std::size_t agents = flag(argc, argv, "--agents", 10'000);
  const auto rounds = static_cast<std::int64_t>(flag(argc, argv, "--rounds", 10));
  const std::size_t cap = flag(argc, argv, "--cap", 32);
  const auto latency = std::chrono::microseconds(flag(argc, argv, "--latency-us", 5'000));
  std::vector<double> sim_rate, load_rate, ratio, sim_cpu, load_cpu, failed;
  for (std::size_t i = 0; i < repeat; ++i) {
    const auto load = in_child([&] { return mock_load_run(20'000, cap, latency); });
    const auto sim = in_child([&] { return mock_scenario_run(agents, rounds, cap, latency); });
    if (load.size() < 4 || sim.size() < 4) {
      std::fprintf(stderr, "a run did not finish\n");
      return 1;
    }
    load_rate.push_back(load[0]);
    sim_rate.push_back(sim[0]);
    ratio.push_back(sim[0] / load[0]);
    load_cpu.push_back(load[3]);
    sim_cpu.push_back(sim[3]);
    failed.push_back(sim[2] + load[2]);
  }
  std::printf("a mock answering after %.1f ms, %zu calls in flight at most; medians of %zu runs\n",
              static_cast<double>(latency.count()) / 1000, cap, repeat);
  std::printf("plain load client (HTTP provider, closed loop)   %8.0f calls/s   CPU %5.1f µs a call\n",
              median(load_rate), median(load_cpu));
  std::printf("scenario, %zu agents × %lld rounds            %8.0f calls/s   CPU %5.1f µs a call   ratio %.3f\n",
              agents, static_cast<long long>(rounds), median(sim_rate), median(sim_cpu), median(ratio));
  std::printf("ideal: %.0f calls/s\n", static_cast<double>(cap) / (static_cast<double>(latency.count()) / 1e6));
  if (median(failed) != 0) std::fprintf(stderr, "warning: %g calls or activations failed\n", median(failed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return has_flag(argc, argv, "--mock") ? mock(argc, argv) : scale(argc, argv); }
