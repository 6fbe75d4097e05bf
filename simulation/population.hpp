#pragma once
// A scenario's population, agent by agent, in index order: groups in the
// order the scenario lists them, each group's agents numbered from 1.

#include "simulation/scenario.hpp"
#include "world/world.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

struct population_member {
  std::string id;
  std::uint32_t group = 0;  // index in scenario::groups
  std::string persona;      // the system prompt, filled from the agent's profile
};

// Throws scenario_error (a profile file that cannot be read, a persona that
// names a field a profile lacks).
std::vector<population_member> build_population(const scenario& s);

// The built-in social world for the scenario, its graph drawn with the
// scenario's seed, each agent following its group's channels.
std::unique_ptr<world> make_social_world(const scenario& s, const std::vector<population_member>& population);

}  // namespace troupe
