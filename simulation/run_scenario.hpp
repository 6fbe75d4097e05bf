#pragma once
// Runs a scenario: spawns its population as agents of a troupe runtime, and
// for each round of its workflow activates agents with what reached them in
// the world (an observation, committed to each agent's thread), lets them act
// through the world's actions (tools), applies the round's actions to the
// world in a fixed order, and records everything in an event log. With a
// durable store each round is committed (the world's round, after the
// agents' threads), and a run killed at any point resumes from its last
// committed round: nothing lost, nothing applied twice.

#include "actors/runtime.hpp"
#include "simulation/scenario.hpp"
#include "world/world.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

// What a scripted group's agent sees when it decides: a pure function of
// this (and the seed) makes the same choice in every run.
struct policy_input {
  std::uint64_t seed = 0;
  std::int64_t round = 0;
  std::uint32_t agent = 0;
  const std::string* agent_id = nullptr;
  const std::vector<std::string>* agent_ids = nullptr;  // the population, by index
  const scripted_policy* weights = nullptr;
  const boost::json::object* observation = nullptr;  // world_observation::data
};

// The actions (tool name and arguments) an activation takes; empty: none.
struct policy_action {
  std::string name;
  boost::json::object arguments;
};
using policy_function = std::function<std::vector<policy_action>(const policy_input&)>;

// The scripted policy for the built-in social world: one action drawn by the
// group's weights, aimed at what the agent observed.
std::vector<policy_action> social_policy(const policy_input& in);

// A program's own world, made for a scenario whose world.kind names it.
using world_factory = std::function<std::unique_ptr<world>(const scenario&)>;

struct scenario_run_options {
  // The model for groups that name one (not "scripted"); null: such a group
  // is an error, unless it lists endpoints.
  std::shared_ptr<llm_provider> provider{};
  // Where threads and the world's rounds are kept; null: in memory (no
  // resume), in a store of the run's own that holds the agents' threads in
  // the compact form (memory_store.hpp), each agent unloading its thread
  // between activations.
  std::shared_ptr<thread_store> store{};
  std::string event_log{};  // a JSONL file; empty: none
  // Continue the run the store holds (its world's committed rounds) instead
  // of starting it; the event log is cut back to its last committed round.
  bool resume = false;
  std::size_t scheduler_threads = 0;
  // Worlds a scenario may name besides the built-in "social" one.
  std::map<std::string, world_factory> worlds{};
  // Scripted policies by world kind (the social one is built in).
  std::map<std::string, policy_function> policies{};
  // Set to stop early: no new activations start, running ones are cancelled,
  // the round is not applied, and the report covers what happened so far.
  const std::atomic<bool>* stop = nullptr;
};

// Live figures, updated as the run goes (read from another thread for a
// progress line).
struct scenario_progress {
  std::atomic<std::int64_t> round{0};
  std::atomic<std::size_t> active{0};  // agents activated in the current round
  std::atomic<std::size_t> activations_done{0};
  std::atomic<std::size_t> activations_failed{0};
  std::atomic<std::size_t> actions{0};
  std::atomic<std::int64_t> input_tokens{0};
  std::atomic<std::int64_t> output_tokens{0};
  std::atomic<std::int64_t> cost_microdollars{0};
};

struct round_summary {
  std::int64_t round = 0;
  int hour = 0;
  std::size_t active = 0;
  std::size_t failed = 0;
  std::map<std::string, std::size_t> actions;  // by action name
  std::size_t refused = 0;                     // actions the world refused (the model read why)
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost = 0;
  double seconds = 0;
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
  boost::json::object world;  // the world's own figures
};

struct scenario_report {
  std::string name;
  std::size_t agents = 0;
  std::int64_t rounds = 0;         // rounds run to the end, in this process and before it
  std::int64_t resumed_after = 0;  // the last round a resumed run found committed
  std::size_t activations = 0;
  std::size_t activations_failed = 0;
  std::map<std::string, std::size_t> errors_by_type;
  std::map<std::string, std::size_t> actions;
  std::size_t interviews = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost = 0;
  double seconds = 0;
  double spawn_seconds = 0;
  double activations_per_second = 0;  // over the rounds' time
  bool stopped = false;
  // A resume found the run already at its end: nothing ran.
  bool finished_before = false;
  std::vector<round_summary> per_round;
};

// Thrown for a scenario the run cannot start (an unknown world, a group
// without a model, a resume with nothing to resume).
struct scenario_run_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by a resume whose scenario is not the one the store's run started
// with (another population, workflow, world or seed).
struct scenario_mismatch : scenario_run_error {
  using scenario_run_error::scenario_run_error;
};

scenario_report run_scenario(const scenario& s, const scenario_run_options& options, scenario_progress& progress);

// The actions the scenario's world offers (for an estimate before the run).
std::vector<tool_spec> scenario_actions(const scenario& s, const scenario_run_options& options = {});

// The id of agent `index` of a group: "{group}-{n}", n counted within the group from 1.
std::string population_agent_id(const std::string& group, std::size_t n);

}  // namespace troupe
