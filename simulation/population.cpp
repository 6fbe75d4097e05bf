#include "simulation/population.hpp"

#include "simulation/profiles.hpp"
#include "simulation/run_scenario.hpp"
#include "simulation/scenario_toml.hpp"
#include "world/social_world.hpp"

#include <filesystem>

namespace troupe {

namespace {

const char* default_persona =
    "You are {id}, one of the {group} in a simulated world. Each round you are told what reached you since you "
    "last looked; act through your tools, as yourself, then say in one line what you did.";

std::string resolve(const scenario& s, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || s.base_dir.empty()) return path;
  return (std::filesystem::path(s.base_dir) / path).string();
}

}  // namespace

std::vector<population_member> build_population(const scenario& s) {
  std::vector<population_member> out;
  std::size_t total = 0;
  for (const auto& g : s.groups) total += g.count;
  out.reserve(total);
  for (std::uint32_t gi = 0; gi < s.groups.size(); ++gi) {
    const population_group& g = s.groups[gi];
    std::vector<boost::json::object> profiles;
    if (!g.profiles.empty()) profiles = read_profiles(resolve(s, g.profiles));
    const std::string& tmpl = g.persona.empty() ? std::string(default_persona) : g.persona;
    static const boost::json::object no_profile;
    for (std::size_t n = 1; n <= g.count; ++n) {
      population_member m;
      m.id = population_agent_id(g.name, n);
      m.group = gi;
      const auto& profile = profiles.empty() ? no_profile : profiles[(n - 1) % profiles.size()];
      try {
        m.persona = fill_persona(tmpl, profile, persona_agent{m.id, g.name, n});
      } catch (const persona_error& e) {
        throw scenario_run_error("population group \"" + g.name + "\", agent " + m.id + ": the persona " + e.what());
      }
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::unique_ptr<world> make_social_world(const scenario& s, const std::vector<population_member>& population) {
  auto w = std::make_unique<social_world>(s.world, s.seed, s.base_dir);
  std::vector<std::string> ids;
  ids.reserve(population.size());
  for (const auto& m : population) ids.push_back(m.id);
  w->populate(ids);
  for (std::uint32_t i = 0; i < population.size(); ++i)
    for (const auto& channel : s.groups[population[i].group].channels) w->subscribe(i, channel);
  return w;
}

}  // namespace troupe
