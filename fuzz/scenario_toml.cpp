// A scenario file (parse_scenario, toml++): read or refused with a
// scenario_error naming the key and the line, never anything else thrown, and
// the message is valid UTF-8. What is read keeps the checks parse_scenario
// promises: a population of named, distinct, non-empty groups, probabilities
// within [0, 1], an hourly profile of 24 weights when there is one, an even k
// for a Watts–Strogatz graph, and a step of one kind each.
//
// Paths resolve against a directory that does not exist, so a file a
// scenario names (profiles, an edge list) by a relative path is never read:
// such a scenario is refused.

#include "simulation/scenario_toml.hpp"
#include "fuzz_input.hpp"
#include "simulation/profiles.hpp"

#include <set>
#include <string>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  scenario s;
  try {
    s = parse_scenario(fuzz::text(data, size), "/nonexistent-troupe-fuzz", "fuzz.toml");
  } catch (const scenario_error& e) {
    fuzz::require_valid_text(e.what(), "a scenario error's message is not valid UTF-8");
    fuzz::require(e.line >= 0, "a scenario error on a negative line");
    return 0;
  }
  fuzz::require(!s.groups.empty(), "a scenario without a population accepted");
  std::set<std::string> names;
  for (const population_group& g : s.groups) {
    fuzz::require(!g.name.empty() && names.insert(g.name).second, "a group name empty or given twice accepted");
    fuzz::require(g.count >= 1, "a group of no agents accepted");
    fuzz::require(g.profiles.empty() || is_profiles_file(g.profiles),
                  "a profiles file of neither CSV nor JSONL accepted");
  }
  fuzz::require(s.clock.probability >= 0 && s.clock.probability <= 1, "a probability outside [0, 1] accepted");
  if (s.clock.hourly)
    for (double h : *s.clock.hourly) fuzz::require(h >= 0, "a negative hourly weight accepted");
  fuzz::require(s.world.graph.kind != graph_kind::watts_strogatz || s.world.graph.k % 2 == 0,
                "an odd k for Watts-Strogatz accepted");
  fuzz::require(s.world.graph.kind != graph_kind::edge_list || !s.world.graph.path.empty(),
                "an edge list without a path accepted");
  for (const workflow_step& step : s.workflow)
    if (const auto* run = std::get_if<run_rounds>(&step))
      fuzz::require(run->rounds >= 1, "a run of no rounds accepted");
  return 0;
}
