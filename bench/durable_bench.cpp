// Simulations that commit every step to a durable store, next to the same
// simulation on the memory store measured in the same run:
//
//   1. turns per second of N agents × M turns (zero-latency scripted model,
//      one tool call per turn) on memory, SQLite (WAL, synchronous=NORMAL),
//      SQLite with every transaction fsynced, and PostgreSQL (when
//      TROUPE_TEST_POSTGRES names a server; scripts/with-postgres.sh starts
//      one), with the commits each transaction carried;
//   2. turn latency p99 of every agent while one agent's commits are made
//      50 ms slower on purpose, next to the same store without the delay.
//
// Configurations run interleaved, each run in a child process of its own;
// medians are printed.
//
//   build/bench/durable_bench [--agents 10000] [--turns 3] [--repeat 3]
//                             [--only STORE] [--skip-slowed]
//
// --only runs the memory store and STORE (sqlite, "sqlite sync=full",
// postgres) in section 1; --skip-slowed leaves section 2 out. Both are for
// profiling one store; docs/benchmarks.md says which run each table comes from.

#include "apps/simulation.hpp"
#include "bench/bench_support.hpp"
#include "runtime/store/memory_store.hpp"
#include "runtime/store/open_store.hpp"
#include "support/store_backends.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;

namespace {

// The memory store behind a store's calling convention: commits go through
// the store threads as a database's would. One agent's commits take
// `delay` longer.
class delayed_store final : public thread_store {
 public:
  delayed_store(std::string slow_thread, std::chrono::milliseconds delay)
      : slow_thread_(std::move(slow_thread)), delay_(delay) {}
  stored<thread> load(const std::string& id) override { return inner_.load(id); }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    if (t.id() == slow_thread_) std::this_thread::sleep_for(delay_);
    return inner_.append(t, expected_rev);
  }
  std::vector<std::string> list() override { return inner_.list(); }
  bool remove(const std::string& id) override { return inner_.remove(id); }

 private:
  memory_store inner_;
  std::string slow_thread_;
  std::chrono::milliseconds delay_;
};

struct run_figures {
  double turns_per_second = 0, p50 = 0, p99 = 0, commits = 0, transactions = 0, failed = 0, cpu_us_per_turn = 0;
};

run_figures figures_of(const std::vector<double>& v) {
  if (v.size() < 7) return {};
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

std::vector<double> simulate(std::shared_ptr<thread_store> store, std::size_t agents, std::size_t turns) {
  simulation_options o;
  o.agents = agents;
  o.turns = turns;
  o.tools_per_turn = 1;
  o.concurrency = 0;  // every agent at once: the heaviest load, the one the figures describe
  o.store = std::move(store);
  simulation_progress progress;
  const double cpu_before = bench::process_cpu_seconds();
  const simulation_report r = run_simulation(o, progress);
  const double cpu = bench::process_cpu_seconds() - cpu_before;
  const double commits = r.store_batching ? static_cast<double>(r.store_batching->commits) : 0;
  const double transactions = r.store_batching ? static_cast<double>(r.store_batching->transactions) : 0;
  return {r.turns_per_second,
          r.turn_latency.p50,
          r.turn_latency.p99,
          commits,
          transactions,
          static_cast<double>(r.turns_failed),
          r.turns_completed ? cpu * 1e6 / static_cast<double>(r.turns_completed) : 0};
}

// A simulation on a fresh SQLite file (`query`: its options), removed afterwards.
std::vector<double> simulate_on_sqlite(const std::string& query, std::size_t agents, std::size_t turns) {
  const auto path =
      std::filesystem::temp_directory_path() / ("troupe-durable-bench-" + std::to_string(getpid()) + ".db");
  std::vector<double> out;
  {
    auto opened = open_store("sqlite:" + path.string() + query);
    if (!opened) {
      std::fprintf(stderr, "cannot open %s: %s\n", path.c_str(), opened.error().message.c_str());
      std::exit(1);
    }
    out = simulate(opened->threads, agents, turns);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t agents = flag(argc, argv, "--agents", 10'000);
  const std::size_t turns = flag(argc, argv, "--turns", 3);
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  const bool postgres = std::getenv("TROUPE_TEST_POSTGRES") != nullptr;
  std::string only;
  bool skip_slowed = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--only" && i + 1 < argc) only = argv[i + 1];
    if (std::string(argv[i]) == "--skip-slowed") skip_slowed = true;
  }

  struct config {
    std::string name;
    std::function<std::vector<double>()> run;
  };
  std::vector<config> configs = {
      {"memory", [&] { return simulate(std::make_shared<memory_store>(), agents, turns); }},
      {"sqlite", [&] { return simulate_on_sqlite("", agents, turns); }},
      {"sqlite sync=full", [&] { return simulate_on_sqlite("?sync=full", agents, turns); }},
  };
  if (postgres)
    configs.push_back({"postgres", [&] {
                         testing::postgres_backend server;
                         return simulate(server.store, agents, turns);
                       }});
  if (!only.empty()) std::erase_if(configs, [&](const config& c) { return c.name != "memory" && c.name != only; });

  std::printf("1. %zu agents x %zu turns, one tool call per turn, every step committed (medians of %zu)\n", agents,
              turns, repeat);
  std::map<std::string, std::vector<run_figures>> runs;
  for (std::size_t r = 0; r < repeat; ++r)
    for (const config& c : configs) runs[c.name].push_back(figures_of(in_child(c.run)));

  auto med = [&](const std::string& name, double run_figures::*field) {
    std::vector<double> v;
    for (const auto& f : runs[name]) v.push_back(f.*field);
    return median(v);
  };
  const double memory_rate = med("memory", &run_figures::turns_per_second);
  std::printf("%-18s %10s %8s %10s %10s %12s %12s %7s\n", "store", "turns/s", "ratio", "p50 ms", "p99 ms",
              "commits/txn", "CPU us/turn", "failed");
  for (const config& c : configs) {
    const double txn = med(c.name, &run_figures::transactions);
    const double rate = med(c.name, &run_figures::turns_per_second);
    char per_txn[32] = "-";
    if (txn > 0) std::snprintf(per_txn, sizeof per_txn, "%.1f", med(c.name, &run_figures::commits) / txn);
    std::printf("%-18s %10.0f %8.2f %10.1f %10.1f %12s %12.0f %7.0f\n", c.name.c_str(), rate,
                memory_rate > 0 ? rate / memory_rate : 0, med(c.name, &run_figures::p50),
                med(c.name, &run_figures::p99), per_txn, med(c.name, &run_figures::cpu_us_per_turn),
                med(c.name, &run_figures::failed));
  }
  if (!postgres) std::printf("(postgres: not measured, TROUPE_TEST_POSTGRES is not set)\n");
  if (skip_slowed) return 0;

  // 2. One agent's commits 50 ms slower; the other agents' turns should not notice.
  const std::size_t slow_agents = std::min<std::size_t>(agents, 1'000), slow_turns = 5;
  std::printf("\n2. %zu agents x %zu turns, sim-0's commits 50 ms slower (medians of %zu)\n", slow_agents, slow_turns,
              repeat);
  std::vector<run_figures> plain, slowed;
  for (std::size_t r = 0; r < repeat; ++r) {
    plain.push_back(figures_of(in_child([&] {
      return simulate(std::make_shared<delayed_store>("sim-0:default", std::chrono::milliseconds(0)), slow_agents,
                      slow_turns);
    })));
    slowed.push_back(figures_of(in_child([&] {
      return simulate(std::make_shared<delayed_store>("sim-0:default", std::chrono::milliseconds(50)), slow_agents,
                      slow_turns);
    })));
  }
  auto med_of = [](const std::vector<run_figures>& v, double run_figures::*field) {
    std::vector<double> x;
    for (const auto& f : v) x.push_back(f.*field);
    return median(x);
  };
  const double p99_plain = med_of(plain, &run_figures::p99), p99_slowed = med_of(slowed, &run_figures::p99);
  std::printf(
      "turn latency p99 (all agents; sim-0 has %zu of %zu turns): %.1f ms without the delay, %.1f ms with it "
      "(ratio %.2f)\n",
      slow_turns, slow_agents * slow_turns, p99_plain, p99_slowed, p99_plain > 0 ? p99_slowed / p99_plain : 0);
  return 0;
}
