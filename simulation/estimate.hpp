#pragma once
// What a scenario will take before it runs (`troupe simulate --scenario F
// --estimate`): activations, model calls, tokens and cost, per group and in
// total, from the scenario alone and a few figures only the world and the
// runtime know (estimate_inputs). Every figure is an expectation, not a
// bound, unless the estimate says so (an events clock).

#include "directives/tool_spec.hpp"
#include "simulation/scenario.hpp"
#include "thread/token_estimator.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

// What the scenario does not say: the tools as the model reads them, and how
// big the world's observations and the model's replies are.
struct estimate_inputs {
  std::vector<tool_spec> world_actions;           // a group that lists no actions may take all of them
  std::vector<tool_spec> other_tools;             // the built-in tools a group may name
  std::int64_t observation_overhead_tokens = 30;  // the round line and the observation's headings
  std::int64_t tokens_per_post = 40;              // one feed item (id, author, text)
  std::int64_t tokens_per_message = 30;           // one direct message
  std::int64_t action_call_tokens = 40;           // the model's output when it calls an action
  std::int64_t tool_result_tokens = 20;           // what the world answers to an action
  std::int64_t answer_tokens = 30;                // the model's closing words after the action
  std::int64_t interview_answer_tokens = 150;
  // Text sizes in tokens; null: default_estimator().
  const token_estimator* estimator = nullptr;
};

struct group_estimate {
  std::string name;
  std::string model;
  std::size_t agents = 0;
  bool scripted = false;   // no model calls: the group follows its scripted policy
  bool priced = false;     // s.prices names the model (cost 0 otherwise)
  double activations = 0;  // expected, over the whole run
  double model_calls = 0;
  double interview_calls = 0;
  // Per call of an activation, the first round's and the largest (history grows to the window).
  std::int64_t first_call_input_tokens = 0;
  std::int64_t max_call_input_tokens = 0;
  double input_tokens = 0;
  double output_tokens = 0;
  double cost = 0;  // dollars
};

struct scenario_estimate {
  std::string name;
  std::int64_t rounds = 0;
  activation_mode mode = activation_mode::every_round;
  // Per round (from 1): the probability that an agent is activated; 1 for
  // every_round, and for an events clock after round 1 (the upper bound).
  std::vector<double> activation_probability;
  bool upper_bound = false;  // an events clock: rounds after the first assume every agent wakes
  std::size_t interview_steps = 0;
  std::vector<group_estimate> groups;
  group_estimate total;            // named "total"; its agents are the population
  std::vector<std::string> notes;  // how the figures were made, one sentence each
};

// Thrown when the inputs cannot describe the scenario (a group names a tool
// the inputs do not hold).
struct estimate_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

scenario_estimate estimate_scenario(const scenario& s, const estimate_inputs& in);

// A table for people, with the notes under it.
std::string format_estimate(const scenario_estimate& e);
boost::json::object estimate_json(const scenario_estimate& e);

}  // namespace troupe
