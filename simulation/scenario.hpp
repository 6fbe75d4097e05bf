#pragma once
// A simulation as a scenario file declares it (docs/simulations.md): who the
// agents are, the world they share, the clock that activates them and the
// workflow of the run. Plain data: read from TOML by read_scenario
// (scenario_toml.hpp), or built by a program.

#include "context/context_policy.hpp"
#include "world/world_spec.hpp"

#include <boost/json/object.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace troupe {

// One OpenAI-compatible (or Anthropic) endpoint a group's model calls are
// spread over, each with its own cap on calls in flight.
struct model_endpoint {
  std::string url;          // base URL, e.g. http://127.0.0.1:8000/v1
  std::string api_key_env;  // the environment variable holding the key; empty: none
  std::size_t max_concurrency = 16;
  friend bool operator==(const model_endpoint&, const model_endpoint&) = default;
};

// A model stand-in for runs without one: each activation takes one action
// drawn with these weights (action name -> weight) from a source seeded by
// the run's seed, the agent and the round, aimed at what the agent observed.
struct scripted_policy {
  std::map<std::string, double> weights{{"post", 1.0}, {"like", 1.0}, {"repost", 0.5}, {"do_nothing", 1.0}};
  friend bool operator==(const scripted_policy&, const scripted_policy&) = default;
};

struct population_group {
  std::string name;
  std::size_t count = 0;
  // A model name for the provider ("gpt-4o-mini", "anthropic:claude-…"), or
  // "scripted": the group follows `policy` instead of a model.
  std::string model = "scripted";
  scripted_policy policy{};
  std::vector<model_endpoint> endpoints{};  // empty: the run's default provider
  std::vector<std::string> actions{};       // world actions this group may take; empty: all
  std::vector<std::string> tools{};         // other tools (built-in) it may call
  context_policy context{};
  int max_iterations = 4;
  // The system prompt, with {field} replaced from the agent's profile (and
  // {id}, {group}, {index}); profiles come one per agent, in order, from a
  // CSV file with a header line or a JSONL file of objects (cycled when
  // shorter than the group).
  std::string persona{};
  std::string profiles{};               // path, relative to the scenario file
  std::vector<std::string> channels{};  // channels the group's agents follow from the start
  friend bool operator==(const population_group&, const population_group&) = default;
};

enum class activation_mode {
  every_round,  // every agent, every round
  probability,  // each agent with `probability` (times the hour's weight)
  events,       // the agents something reached in the last round (round 1: probability)
};

struct clock_spec {
  activation_mode mode = activation_mode::every_round;
  double probability = 1.0;
  // Weights by hour of the simulated day (0..23), multiplying probability;
  // unset: 1 every hour.
  std::optional<std::array<double, 24>> hourly{};
  std::int64_t minutes_per_round = 60;
  std::int64_t start_hour = 8;  // the simulated hour of round 1
  friend bool operator==(const clock_spec&, const clock_spec&) = default;
};

// The workflow, step by step.
struct run_rounds {
  std::int64_t rounds = 1;
  friend bool operator==(const run_rounds&, const run_rounds&) = default;
};
// An intervention: an action applied at the end of the next round, in the
// name of an agent (by id) or of the operator (empty `as`).
struct inject_action {
  std::string action;  // "post", "send_message", …
  std::string as{};
  boost::json::object arguments{};
  friend bool operator==(const inject_action&, const inject_action&) = default;
};
// Asks a sample of agents a question on a thread of its own ("interview"):
// the answers are recorded, the world never sees them.
struct interview {
  std::string question;
  std::size_t sample = 0;  // agents, drawn with the run's seed; 0: all
  std::string group{};     // empty: every group
  friend bool operator==(const interview&, const interview&) = default;
};
struct checkpoint {
  friend bool operator==(const checkpoint&, const checkpoint&) = default;
};
using workflow_step = std::variant<run_rounds, inject_action, interview, checkpoint>;

// Dollars per million tokens.
struct model_price {
  double input = 0;
  double output = 0;
  friend bool operator==(const model_price&, const model_price&) = default;
};

struct scenario {
  std::string name;
  std::uint64_t seed = 1;
  std::vector<population_group> groups;
  world_spec world{};
  clock_spec clock{};
  std::vector<workflow_step> workflow{};        // empty: one run_rounds{1}
  std::map<std::string, model_price> prices{};  // by model name
  std::size_t concurrency = 1'000;              // activations in flight at once
  double activation_timeout_seconds = 120;
  std::string base_dir{};  // where relative paths resolve (the scenario file's folder)
  friend bool operator==(const scenario&, const scenario&) = default;
};

}  // namespace troupe
