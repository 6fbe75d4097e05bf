// What an agent costs to hold and to start and stop, at scale:
//
//   1. memory per agent after one turn with one tool call (the spawned agent,
//      its thread of 4 entries, its machine state): the growth of resident
//      memory between a run of 1,000 agents and one of 100,000, divided by
//      the 99,000 agents between them, each run in a process of its own;
//   2. seconds to spawn the 100,000 agents, and to shut them down with the
//      runtime.
//
// Both runs go through run_simulation (the engine of `troupe simulate`:
// zero-latency scripted model, one tool call per turn), whose own
// bookkeeping per agent (a handle, a turn counter, a latency sample) is
// counted in too. Under jemalloc it also splits the figure into what live
// objects hold and the pages around them. Measured twice: with simulate's
// default bound on the turns in flight, and with every agent's turn at once
// (whose transient allocations leave freed pages behind in the RSS).
// Repeats and prints medians.
//
//   build/bench/agent_memory_bench [--small 1000] [--large 100000] [--repeat 3]

#include "apps/simulation.hpp"
#include "bench/bench_support.hpp"

#include <cstdio>
#include <vector>

using namespace troupe;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;

namespace {

// RSS after the turns (agents still up), spawn seconds, teardown seconds,
// failed turns, and the allocator's bytes in live allocations and in the
// pages holding them at the same moment (-1 when it cannot tell).
std::vector<double> one_turn_run(std::size_t agents, std::size_t concurrency) {
  simulation_progress progress;
  simulation_options o;
  o.agents = agents;
  o.concurrency = concurrency;
  o.turns = 1;
  o.tools_per_turn = 1;
  const simulation_report r = run_simulation(o, progress);
  auto or_none = [](const std::optional<std::size_t>& v) { return v ? static_cast<double>(*v) : -1.0; };
  return {static_cast<double>(r.rss_bytes_after),
          r.spawn_seconds,
          r.teardown_seconds,
          static_cast<double>(r.turns_failed),
          or_none(r.heap_bytes_after),
          or_none(r.heap_active_bytes_after)};
}

// Both figures, from runs of `small` and `large` agents with at most
// `concurrency` turns in flight (0: every agent at once), repeated.
void measure(std::size_t small, std::size_t large, std::size_t repeat, std::size_t concurrency) {
  std::vector<double> per_agent, heap_per_agent, active_per_agent, spawn, teardown;
  for (std::size_t i = 0; i < repeat; ++i) {
    const auto a = in_child([&] { return one_turn_run(small, concurrency); });
    const auto b = in_child([&] { return one_turn_run(large, concurrency); });
    if (a.at(3) != 0 || b.at(3) != 0) std::fprintf(stderr, "warning: %g turns failed\n", a.at(3) + b.at(3));
    const double between = static_cast<double>(large - small);
    per_agent.push_back((b.at(0) - a.at(0)) / between);
    if (a.at(4) >= 0 && b.at(4) >= 0) {
      heap_per_agent.push_back((b.at(4) - a.at(4)) / between);
      active_per_agent.push_back((b.at(5) - a.at(5)) / between);
    }
    spawn.push_back(b.at(1));
    teardown.push_back(b.at(2));
  }
  if (concurrency)
    std::printf("at most %zu turns in flight (troupe simulate's default), medians of %zu runs\n", concurrency, repeat);
  else
    std::printf("every agent's turn at once (--concurrency 0), medians of %zu runs\n", repeat);
  std::printf("memory per agent after one turn with one tool call (RSS growth from %zu to %zu agents): %.0f bytes\n",
              small, large, median(per_agent));
  if (!heap_per_agent.empty()) {
    // Where the RSS goes: what live objects hold, the pages they sit in
    // (with the gaps freed objects left between them), and the rest of the
    // RSS, pages the allocator keeps after the turns' transient allocations
    // were freed (jemalloc gives them back after its decay time, 10 s).
    std::printf("  of which in live allocations (jemalloc's stats.allocated, same growth): %.0f bytes\n",
                median(heap_per_agent));
    std::printf("  of which in the pages holding them (stats.active): %.0f bytes\n", median(active_per_agent));
  }
  std::printf("spawning %zu agents: %.2f s\n", large, median(spawn));
  std::printf("shutting them down: %.2f s\n\n", median(teardown));
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t small = flag(argc, argv, "--small", 1'000);
  const std::size_t large = flag(argc, argv, "--large", 100'000);
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  measure(small, large, repeat, simulation_options{}.concurrency);
  measure(small, large, repeat, 0);
  return 0;
}
