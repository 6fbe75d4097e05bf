#pragma once
// A scenario file: the TOML form of a scenario (simulation/scenario.hpp),
// documented key by key in docs/simulations.md ("Scenario files"). Reading
// checks everything a run needs before it starts: a bad file is refused with
// the key and the line to fix, never half read.

#include "config/field_error.hpp"
#include "simulation/scenario.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

// what() reads "KEY: REASON (FILE:LINE)", e.g.
// "population[1].count: must be between 1 and 4294967294 (town.toml:14)".
// A TOML syntax error has no key; a file that cannot be read, no line.
struct scenario_error : field_error {
  using field_error::field_error;
  explicit scenario_error(const field_error& e) : field_error(e) {}
};

// The actions of the built-in social world, which a social scenario's
// policies, action lists and interventions may name.
const std::vector<std::string>& social_actions();

// `path` read and parsed; relative paths in it resolve against its folder.
scenario read_scenario(const std::string& path);
// `source_name` names the text in errors and, without a `name` key, names
// the scenario (its file stem). Files it names (profiles, an edge list) are
// looked for under `base_dir`, and must exist.
scenario parse_scenario(std::string_view toml_text, std::string base_dir, std::string source_name);

}  // namespace troupe
