#pragma once
// Many agents holding conversations at once, through the normal agent loop,
// with a scripted model: each turn asks a question, the model calls K tools,
// gets their results and answers. Used by `troupe simulate`, its tests and
// the throughput benchmark.

#include "actors/runtime.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace troupe {

struct simulation_options {
  std::size_t agents = 10;
  std::size_t turns = 3;           // per agent
  std::size_t tools_per_turn = 1;
  std::size_t scheduler_threads = 0;  // 0: one per core
};

struct simulation_progress {
  std::atomic<std::size_t> completed{0};
  std::atomic<std::size_t> failed{0};
};

struct simulation_report {
  std::size_t agents = 0;
  std::size_t turns_completed = 0;
  std::size_t turns_failed = 0;
  double seconds = 0;
  double turns_per_second = 0;
  std::size_t peak_rss_bytes = 0;
  std::size_t rss_bytes_per_agent = 0;  // resident memory grown per agent, spawn to end
  std::size_t llm_calls = 0;
  std::size_t tool_calls = 0;
};

// Runs the simulation to the end. `on_tick` is called about every 200 ms
// from the calling thread while it runs (for a progress display).
simulation_report run_simulation(const simulation_options& options, simulation_progress& progress,
                                 const std::function<void()>& on_tick = {});

// Resident memory of this process now, and at its peak (from /proc).
std::size_t current_rss_bytes();
std::size_t peak_rss_bytes();

}  // namespace troupe
