#pragma once
// Many agents holding conversations at once, through the normal agent loop
// (the same path as `troupe ask`): each of N agents runs M turns on a thread
// of its own, at most C turns in flight across all agents. The model is a
// real provider (a load run against a model server) or, by default, a
// scripted one whose every turn calls K tools and then answers (a run of the
// runtime alone). Used by `troupe simulate`, its tests and benchmarks.

#include "actors/runtime.hpp"
#include "context/context_policy.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct simulation_options {
  std::size_t agents = 10;
  std::size_t turns = 3;  // per agent
  // Turns in flight at once across all agents; 0: every agent at once. A
  // bound keeps the turns' transient memory (messages, contexts, requests in
  // flight) to that many turns instead of one per agent, and runs faster
  // with fewer agents' states competing for the caches (figures in
  // docs/benchmarks.md). Against a model server it is also the most requests open at once.
  std::size_t concurrency = 1'000;
  std::size_t scheduler_threads = 0;  // 0: one per core

  // The model. Null: the built-in scripted model, calling tools_per_turn
  // tools each turn.
  std::shared_ptr<llm_provider> provider{};
  std::string model = "scripted:sim";
  std::size_t tools_per_turn = 1;
  std::string system_prompt{};       // "{agent}" is replaced
  std::vector<std::string> tools{};  // built-in tools to enable (with a provider)
  // Registers more tools (MCP servers' tools) before the agents start, and
  // returns their names to enable too (with a provider).
  std::function<std::vector<std::string>(runtime&)> add_tools{};
  int max_iterations = 10;
  context_policy context{};
  // Where the agents' threads are kept; null: in memory.
  std::shared_ptr<thread_store> store{};
  // The user message of each turn; "{agent}" and "{turn}" are replaced.
  std::string question = "Question {turn} from agent {agent}.";
  double turn_timeout_seconds = 300;
  // Set: a reproducible run. Ids (entries, calls, requests) come from sources
  // seeded from it and the agent's id, and entries are stamped by a logical
  // clock per agent instead of the wall clock, so two runs with the same
  // seed leave the same threads, byte for byte.
  std::optional<std::uint64_t> seed{};
  // Set to stop early: no new turns start, running ones are cancelled, and
  // the report covers what happened so far.
  const std::atomic<bool>* stop = nullptr;
};

struct simulation_progress {
  std::atomic<std::size_t> spawned{0};  // agents started so far
  std::atomic<std::size_t> completed{0};
  std::atomic<std::size_t> failed{0};
};

struct latency_summary {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;  // milliseconds
  std::size_t samples = 0;
};

struct simulation_report {
  std::size_t agents = 0;
  std::size_t turns_completed = 0;
  std::size_t turns_failed = 0;
  bool stopped = false;  // ended early by `stop`
  double seconds = 0;
  double turns_per_second = 0;
  std::size_t peak_rss_bytes = 0;
  std::size_t rss_bytes_per_agent = 0;  // resident memory grown per agent, spawn to end
  std::size_t rss_bytes_after = 0;      // resident memory when the turns ended, agents still up
  // The allocator's own count at the same moment, when it can give one
  // (jemalloc: troupe's executables link it). RSS also holds pages the
  // allocator keeps after the run's transient allocations were freed.
  std::optional<std::size_t> heap_bytes_per_agent;     // bytes in live allocations grown per agent
  std::optional<std::size_t> heap_bytes_after;         // bytes in live allocations
  std::optional<std::size_t> heap_active_bytes_after;  // bytes of the pages that hold them
  double spawn_seconds = 0;                            // starting every agent
  double teardown_seconds = 0;                         // stopping them and the runtime
  std::size_t llm_calls = 0;
  std::size_t tool_calls = 0;
  latency_summary turn_latency;  // ask to reply
  latency_summary first_token;   // ask to the first streamed text (when the model streams)
  latency_summary own_time;      // a turn's time outside its model calls: troupe's share
  std::map<std::string, std::size_t> errors_by_type;
  std::size_t retries = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t calls_without_usage = 0;  // model calls that reported no usage: not counted as 0 tokens
  // For a store that batches commits (SQLite): commits and the transactions
  // that carried them during the run.
  std::optional<commit_batching> store_batching;
};

// Runs the simulation to the end. `on_tick` is called about every 200 ms
// from the calling thread while it runs (for a progress display).
simulation_report run_simulation(const simulation_options& options, simulation_progress& progress,
                                 const std::function<void()>& on_tick = {});

// Resident memory of this process now, and at its peak (from /proc).
std::size_t current_rss_bytes();
std::size_t peak_rss_bytes();

// What the allocator holds now: bytes in live allocations, and bytes of the
// pages they occupy. Only jemalloc tells; nullopt under any other allocator.
struct heap_usage {
  std::size_t allocated = 0;
  std::size_t active = 0;
};
std::optional<heap_usage> current_heap_usage();

}  // namespace troupe
