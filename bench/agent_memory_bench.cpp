// What an agent costs to hold and to start and stop, at scale (issue 16):
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
// counted in too. Repeats and prints medians.
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

// RSS after the turns (agents still up), spawn seconds, teardown seconds, failed turns.
std::vector<double> one_turn_run(std::size_t agents) {
  simulation_progress progress;
  simulation_options o;
  o.agents = agents;
  o.turns = 1;
  o.tools_per_turn = 1;
  const simulation_report r = run_simulation(o, progress);
  return {static_cast<double>(r.rss_bytes_after), r.spawn_seconds, r.teardown_seconds,
          static_cast<double>(r.turns_failed)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t small = flag(argc, argv, "--small", 1'000);
  const std::size_t large = flag(argc, argv, "--large", 100'000);
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);

  std::vector<double> per_agent, spawn, teardown;
  for (std::size_t i = 0; i < repeat; ++i) {
    const auto a = in_child([&] { return one_turn_run(small); });
    const auto b = in_child([&] { return one_turn_run(large); });
    if (a.at(3) != 0 || b.at(3) != 0) std::fprintf(stderr, "warning: %g turns failed\n", a.at(3) + b.at(3));
    per_agent.push_back((b.at(0) - a.at(0)) / static_cast<double>(large - small));
    spawn.push_back(b.at(1));
    teardown.push_back(b.at(2));
  }
  std::printf("medians of %zu runs\n\n", repeat);
  std::printf("memory per agent after one turn with one tool call (RSS growth from %zu to %zu agents): %.0f bytes\n",
              small, large, median(per_agent));
  std::printf("spawning %zu agents: %.2f s\n", large, median(spawn));
  std::printf("shutting them down: %.2f s\n", median(teardown));
  return 0;
}
