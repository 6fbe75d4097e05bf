#pragma once
// Which agents a round activates: a pure function of the clock, the run's
// seed, the round and (for the events clock) whom the last round reached, so
// a resumed run activates exactly whom the uninterrupted one did.

#include "simulation/scenario.hpp"

#include <cstdint>
#include <vector>

namespace troupe {

// The rounds the scenario's workflow runs in all (an empty workflow: one).
std::int64_t total_rounds(const scenario& s);

// The simulated hour of day (0..23) a round runs at.
int hour_of_round(const clock_spec& clock, std::int64_t round);

// The probability that an agent is activated in this round when the clock
// draws (probability times the hour's weight, at most 1).
double activation_probability(const clock_spec& clock, std::int64_t round);

// The indices, ascending, of the agents (0..population-1) activated in
// `round` (from 1). `reached`: the agents something reached in the round
// before (ascending), which the events clock wakes.
std::vector<std::uint32_t> activated_agents(const clock_spec& clock, std::uint64_t seed, std::int64_t round,
                                            std::uint32_t population, const std::vector<std::uint32_t>& reached);

// `count` distinct indices drawn from `from` (ascending in, ascending out),
// for a round's salt; all of them when count is 0 or not smaller.
std::vector<std::uint32_t> sample_agents(const std::vector<std::uint32_t>& from, std::size_t count, std::uint64_t seed,
                                         std::uint64_t salt);

}  // namespace troupe
