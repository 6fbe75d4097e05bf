// A world of a program's own in a simulation: herders share one pasture.
// Each round a herder may graze sheep on it (each sheep eats one unit of
// grass and earns one coin), rest, or say something everyone hears; the
// grass grows back by a fifth of what is left, up to the pasture's size.
// Graze too much and there is nothing left to grow: the tragedy of the
// commons, round by round.
//
// The program registers the world under the name its scenario file gives
// (world.kind = "commons"), and a scripted policy for herders without a
// model; a group with a model acts through the same tools.
//
//   commons_world [SCENARIO] [--events FILE]
//       default scenario: examples/scenarios/commons.toml

#include "runtime/tools/tool.hpp"
#include "simulation/run_scenario.hpp"
#include "simulation/scenario_toml.hpp"
#include "world/seeded_random.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace json = boost::json;
using namespace troupe;

namespace {

class commons final : public world {
 public:
  explicit commons(std::int64_t pasture) : grass_(pasture), pasture_(pasture) {}

  void populate(const std::vector<std::string>& ids) override {
    ids_ = ids;
    coins_.assign(ids.size(), 0);
  }

  std::vector<tool_spec> actions() const override {
    auto schema = [](json::object properties, json::array required) {
      return json::object{{"type", "object"},
                          {"properties", std::move(properties)},
                          {"required", std::move(required)},
                          {"additionalProperties", false}};
    };
    return {
        {"graze", "Graze this many sheep on the pasture this round: each eats one unit of grass, earns one coin.",
         schema({{"sheep", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}}}}, {"sheep"})},
        {"rest", "Keep your sheep home this round.", schema({}, {})},
        {"say", "Say something every herder hears next round.",
         schema({{"text", {{"type", "string"}, {"maxLength", 280}}}}, {"text"})},
    };
  }

  // Every herder of a round sees the same pasture: what they ask for is
  // shared out at the round's end, so a check only reads.
  json::value check(const world_action& a) const override {
    if (a.name == "graze") return json::object{{"asked", a.arguments.at("sheep")}, {"grass_now", grass_}};
    return json::object{{"ok", true}};
  }

  world_observation observe(std::uint32_t agent, std::int64_t) const override {
    world_observation o;
    std::string text = "The pasture holds " + std::to_string(grass_) + " of " + std::to_string(pasture_) +
                       " units of grass. You have " + std::to_string(coins_[agent]) + " coins.";
    json::array said;
    for (const auto& [who, words] : said_) {
      text += "\n" + ids_[who] + " said: " + words;
      said.push_back(json::object{{"from", ids_[who]}, {"text", words}});
    }
    o.text = std::move(text);
    o.data = {{"grass", grass_}, {"pasture", pasture_}, {"coins", coins_[agent]}, {"said", std::move(said)}};
    o.empty = false;
    return o;
  }

  void apply(std::int64_t, const std::vector<std::uint32_t>&, const std::vector<world_action>& actions) override {
    said_.clear();
    std::int64_t asked = 0;
    for (const auto& a : actions)
      if (a.name == "graze") asked += a.arguments.at("sheep").to_number<std::int64_t>();
    // When the herders ask for more than there is, each gets a share in
    // proportion, in key order, so the split never depends on timing.
    eaten_ = std::min(asked, grass_);
    std::int64_t left = eaten_;
    for (const auto& a : actions) {
      if (a.name == "say" && a.key.agent != operator_agent)
        said_.emplace_back(a.key.agent, std::string(a.arguments.at("text").as_string()));
      if (a.name != "graze" || a.key.agent == operator_agent) continue;
      const auto sheep = a.arguments.at("sheep").to_number<std::int64_t>();
      const std::int64_t share = asked <= grass_ ? sheep : std::min(left, sheep * grass_ / asked);
      coins_[a.key.agent] += share;
      left -= share;
    }
    grass_ -= eaten_;
    grass_ = std::min(pasture_, grass_ + grass_ / 5);
  }

  json::object round_figures() const override { return {{"grass", grass_}, {"eaten", eaten_}}; }

 private:
  std::vector<std::string> ids_;
  std::vector<std::int64_t> coins_;
  std::vector<std::pair<std::uint32_t, std::string>> said_;
  std::int64_t grass_;
  std::int64_t pasture_;
  std::int64_t eaten_ = 0;
};

// A herder without a model: grazes what it deems its fair share, more when
// its seeded temper says so, and rests when the pasture runs low.
std::vector<policy_action> herder_policy(const policy_input& in) {
  const auto grass = in.observation->at("grass").to_number<std::int64_t>();
  const auto pasture = in.observation->at("pasture").to_number<std::int64_t>();
  const auto herders = static_cast<std::int64_t>(in.agent_ids->size());
  if (grass * 4 < pasture) return {{"say", json::object{{"text", "The grass is nearly gone. I will rest."}}}};
  const std::int64_t fair = std::max<std::int64_t>(1, grass / (5 * herders));
  const bool greedy = unit_draw(draw64(in.seed, static_cast<std::uint64_t>(in.round), in.agent)) < 0.3;
  return {{"graze", json::object{{"sheep", std::clamp<std::int64_t>(greedy ? fair * 3 : fair, 1, 10)}}}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(TROUPE_EXAMPLES_DIR) + "/scenarios/commons.toml";
  scenario_run_options options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--events") == 0 && i + 1 < argc)
      options.event_log = argv[++i];
    else
      path = argv[i];
  }
  try {
    const scenario s = read_scenario(path);
    options.worlds["commons"] = [](const scenario& sc) {
      const auto* pasture = sc.world.settings.if_contains("pasture");
      if (!pasture || !pasture->is_int64() || pasture->as_int64() <= 0)
        throw std::invalid_argument("world.settings.pasture: must be a positive integer (the units of grass)");
      return std::make_unique<commons>(pasture->as_int64());
    };
    options.policies["commons"] = herder_policy;
    scenario_progress progress;
    const scenario_report r = run_scenario(s, options, progress);
    for (const auto& round : r.per_round)
      std::printf("round %2lld: %3zu herders, grass %4lld, eaten %3lld\n", static_cast<long long>(round.round),
                  round.active, static_cast<long long>(round.world.at("grass").to_number<std::int64_t>()),
                  static_cast<long long>(round.world.at("eaten").to_number<std::int64_t>()));
    std::printf("%zu activations (%zu failed) in %.2f s\n", r.activations, r.activations_failed, r.seconds);
    return r.activations_failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commons_world: %s\n", e.what());
    return 1;
  }
}
