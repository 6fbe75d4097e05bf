#pragma once
// A world the agents of a simulation share: its state, the actions agents
// take on it (each a tool the model calls), what each agent observes when it
// is activated, and how a round's actions change it.
//
// A round has two phases, and the world is written in only one of them:
//
//   during the round  agents observe (observe) and act (check), from many
//                     threads at once, against the state as the last round
//                     left it: both only read;
//   at its end        the runner hands the round's accepted actions to apply,
//                     in the order of their keys (agent index, then the
//                     agent's own order), on one thread.
//
// So every agent of a round sees the same world, no lock is taken while the
// agents run, and a seeded run applies the same actions in the same order
// whatever the threads did: its world and its event log repeat to the byte.
// The round's actions are also all a resumed run needs: the world after
// round k is the initial world with rounds 1..k applied again.

#include "directives/tool_spec.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace troupe {

// The agent an intervention is made in the name of: the scenario's operator,
// not one of the population.
inline constexpr std::uint32_t operator_agent = std::numeric_limits<std::uint32_t>::max();

// Where an action sits in a round's order: the deterministic key the world
// derives any ids from (a post made by agent 12 as its 2nd action of round
// 3 is the same post in every run with the same seed).
struct action_key {
  std::uint32_t agent = 0;  // the agent's index in the population, or operator_agent
  std::uint32_t seq = 0;    // the action's place among the agent's actions this round

  friend bool operator==(const action_key&, const action_key&) = default;
  friend auto operator<=>(const action_key&, const action_key&) = default;
};

struct world_action {
  std::int64_t round = 0;
  action_key key;
  std::string name;  // the action's tool name: "post", "like", …
  boost::json::object arguments;
  boost::json::value result;  // what check answered (ids the world made up)
};

// What reached an agent since it was last activated, as the model reads it
// (text) and as a program reads it (data). Empty: nothing reached it.
struct world_observation {
  std::string text;
  boost::json::object data;
  bool empty = true;
};

class world {
 public:
  virtual ~world() = default;

  // The population, once, before round 1: agent index i is agent_ids[i].
  virtual void populate(const std::vector<std::string>& agent_ids) = 0;

  // The actions agents may take, as tools (names unique, JSON Schemas for
  // their arguments: the runtime validates arguments before check sees them).
  virtual std::vector<tool_spec> actions() const = 0;

  // During a round (concurrently, read-only): checks an action against the
  // state at the round's start and returns what the model reads as its
  // result. Throws tool_failure (runtime/tools/tool.hpp) to refuse it.
  virtual boost::json::value check(const world_action& action) const = 0;

  // During a round (concurrently, read-only): what reached the agent since
  // its last activation (up to the round's start).
  virtual world_observation observe(std::uint32_t agent, std::int64_t round) const = 0;

  // At the round's end (one thread): the agents activated this round (in
  // index order; they have now seen what reached them) and the round's
  // accepted actions, interventions included, in key order.
  virtual void apply(std::int64_t round, const std::vector<std::uint32_t>& activated,
                     const std::vector<world_action>& actions) = 0;

  // After apply: the agents something reached in that round (in index
  // order), for a clock that wakes agents by events.
  virtual std::vector<std::uint32_t> reached() const { return {}; }

  // After apply: figures of the round for the event log and the report
  // (counts by kind, sizes), as a flat object of numbers.
  virtual boost::json::object round_figures() const { return {}; }
};

}  // namespace troupe
