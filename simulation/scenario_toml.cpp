#include "simulation/scenario_toml.hpp"

#include "config/detail/context_choice_toml.hpp"
#include "config/detail/toml_reader.hpp"
#include "config/file_text.hpp"
#include "simulation/profiles.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

namespace troupe {

namespace {

// Agent indexes are 32 bits, and the last one names the operator.
constexpr std::int64_t max_agents = std::numeric_limits<std::uint32_t>::max() - 1;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool is_social_action(std::string_view name) {
  const auto& all = social_actions();
  return std::find(all.begin(), all.end(), name) != all.end();
}

std::string not_an_action(std::string_view name) {
  return "\"" + std::string(name) + "\" is not an action of the social world (" + joined(social_actions()) + ")";
}

// A file the scenario names: it must be there before the run starts.
void require_file(table_reader& r, std::string_view key, const std::string& path, const std::string& base_dir) {
  const std::string resolved = resolve_path(path, base_dir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(resolved, ec)) r.fail(key, "no such file: " + resolved);
}

// A TOML value as JSON (an intervention's arguments): dates and times have no
// JSON form, and neither have infinities nor NaN.
boost::json::value json_of(const table_reader& r, std::string_view key, const std::string& at, const toml::node& n) {
  if (n.is_string()) return boost::json::string(n.as_string()->get());
  if (n.is_integer()) return n.as_integer()->get();
  if (n.is_boolean()) return n.as_boolean()->get();
  if (n.is_floating_point()) {
    const double d = n.as_floating_point()->get();
    if (!std::isfinite(d)) r.fail_at(n, key, at, "must be a finite number");
    return d;
  }
  if (n.is_array()) {
    boost::json::array a;
    for (const toml::node& item : *n.as_array())
      a.push_back(json_of(r, key, at + "[" + std::to_string(a.size()) + "]", item));
    return a;
  }
  if (n.is_table()) {
    boost::json::object o;
    for (const auto& [k, v] : *n.as_table()) o[k.str()] = json_of(r, key, at + "." + std::string(k.str()), v);
    return o;
  }
  r.fail_at(n, key, at, "dates and times have no JSON form: write them as strings");
}

graph_kind graph_kind_of(table_reader& r) {
  std::string kind;
  r.text("kind", kind, true);
  if (kind == "none") return graph_kind::none;
  if (kind == "edge_list") return graph_kind::edge_list;
  if (kind == "erdos_renyi") return graph_kind::erdos_renyi;
  if (kind == "barabasi_albert") return graph_kind::barabasi_albert;
  if (kind == "watts_strogatz") return graph_kind::watts_strogatz;
  r.fail("kind", "must be none, edge_list, erdos_renyi, barabasi_albert or watts_strogatz, not \"" + kind + "\"");
}

graph_spec read_graph(table_reader& r, const std::string& base_dir) {
  graph_spec g;
  g.kind = graph_kind_of(r);
  switch (g.kind) {
    case graph_kind::none:
      break;
    case graph_kind::edge_list:
      r.text("path", g.path, true);
      require_file(r, "path", g.path, base_dir);
      break;
    case graph_kind::erdos_renyi:
      r.number_in("p", g.p, 0, 1);
      break;
    case graph_kind::barabasi_albert:
      r.count("m", g.m, 1, max_agents);
      break;
    case graph_kind::watts_strogatz:
      r.count("k", g.k, 2, max_agents);
      if (g.k % 2 != 0) r.fail("k", "must be even (k/2 neighbours on each side of the ring)");
      r.number_in("beta", g.beta, 0, 1);
      break;
  }
  r.refuse_unknown();
  return g;
}

world_spec read_world(table_reader& r, const std::string& base_dir) {
  world_spec w;
  r.text("kind", w.kind);
  if (w.kind.empty()) r.fail("kind", "must not be empty");
  r.count("feed_size", w.feed_size, 0, 10'000);
  r.count("inbox_size", w.inbox_size, 0, 10'000);
  if (const toml::table* t = r.table("graph")) {
    table_reader gr(*t, r.name("graph"), r.file());
    w.graph = read_graph(gr, base_dir);
  }
  const auto channels = r.tables("channels");
  std::set<std::string> names;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    table_reader cr(*channels[i], r.name("channels") + "[" + std::to_string(i) + "]", r.file());
    channel_spec c;
    cr.text("name", c.name, true);
    cr.text("description", c.description);
    cr.refuse_unknown();
    if (!names.insert(c.name).second) cr.fail("name", "another channel is already named " + c.name);
    w.channels.push_back(std::move(c));
  }
  if (const toml::node* n = r.find("settings")) {
    if (!n->is_table()) r.fail("settings", "must be a table of the world's own settings");
    w.settings = json_of(r, "settings", "", *n).as_object();
  }
  r.refuse_unknown();
  return w;
}

activation_mode mode_of(table_reader& r) {
  std::string mode = "every_round";
  r.text("mode", mode);
  if (mode == "every_round") return activation_mode::every_round;
  if (mode == "probability") return activation_mode::probability;
  if (mode == "events") return activation_mode::events;
  r.fail("mode", "must be every_round, probability or events, not \"" + mode + "\"");
}

clock_spec read_clock(table_reader& r) {
  clock_spec c;
  c.mode = mode_of(r);
  for (const char* key : {"probability", "hourly"})
    if (c.mode == activation_mode::every_round && r.has(key))
      r.fail(key, "only with mode = \"probability\" or \"events\" (every_round activates every agent)");
  r.number_in("probability", c.probability, 0, 1);
  std::vector<double> hourly;
  r.numbers("hourly", hourly, 0, 1e6);
  if (r.has("hourly")) {
    if (hourly.size() != 24)
      r.fail("hourly", "must have 24 numbers, hours 0 to 23 (it has " + std::to_string(hourly.size()) + ")");
    if (std::all_of(hourly.begin(), hourly.end(), [](double h) { return h == 0; }))
      r.fail("hourly", "must have a weight above 0 for some hour (else no agent is ever active)");
    c.hourly.emplace();
    std::copy(hourly.begin(), hourly.end(), c.hourly->begin());
  }
  r.count("minutes_per_round", c.minutes_per_round, 1, 60 * 24 * 366);
  r.count("start_hour", c.start_hour, 0, 23);
  r.refuse_unknown();
  return c;
}

scripted_policy read_policy(table_reader& r, bool social) {
  scripted_policy p;
  p.weights.clear();
  for (const auto& [key, value] : r.table()) {
    const std::string action(key.str());
    if (social && !is_social_action(action)) r.fail(action, not_an_action(action));
    double w = 0;
    if (!r.number_in(action, w, 0, 1e9)) continue;
    p.weights[action] = w;
  }
  if (std::none_of(p.weights.begin(), p.weights.end(), [](const auto& kv) { return kv.second > 0; }))
    r.fail_table("needs an action with a weight above 0");
  return p;
}

model_endpoint read_endpoint(table_reader& r) {
  model_endpoint e;
  r.text("url", e.url, true);
  if (e.url.rfind("http://", 0) != 0 && e.url.rfind("https://", 0) != 0)
    r.fail("url", "must start with http:// or https://");
  r.text("api_key_env", e.api_key_env);
  r.count("max_concurrency", e.max_concurrency, 1, 1'000'000);
  r.refuse_unknown();
  return e;
}

bool builtin_persona_field(std::string_view f) { return f == "id" || f == "group" || f == "index"; }

population_group read_group(table_reader& r, const world_spec& world, const std::string& base_dir) {
  const bool social = world.kind == "social";
  population_group g;
  r.text("name", g.name, true);
  if (!r.has("count")) r.fail_missing("count");
  r.count("count", g.count, 1, max_agents);
  r.text("model", g.model);
  if (g.model.empty()) r.fail("model", "must not be empty (\"scripted\" for a group without a model)");
  const bool scripted = g.model == "scripted";

  r.texts("actions", g.actions);
  std::set<std::string> actions;
  for (const std::string& a : g.actions) {
    if (social && !is_social_action(a)) r.fail("actions", not_an_action(a));
    if (!actions.insert(a).second) r.fail("actions", "names " + a + " twice");
  }
  if (const toml::table* t = r.table("policy")) {
    if (!scripted) r.fail("policy", "only for model = \"scripted\" (a model chooses its own actions)");
    table_reader pr(*t, r.name("policy"), r.file());
    g.policy = read_policy(pr, social);
    for (const auto& [action, weight] : g.policy.weights)
      if (weight > 0 && !actions.empty() && !actions.count(action))
        pr.fail(action, "the group may not take " + action + " (it is not in actions)");
  }
  const auto endpoints = r.tables("endpoints");
  if (scripted && !endpoints.empty()) r.fail("endpoints", "a scripted group calls no model");
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    table_reader er(*endpoints[i], r.name("endpoints") + "[" + std::to_string(i) + "]", r.file());
    g.endpoints.push_back(read_endpoint(er));
  }
  r.texts("tools", g.tools);
  g.context = resolve_context(read_context_choice(r), g.model);
  r.count("max_iterations", g.max_iterations, 1, 1000);

  r.text("profiles", g.profiles);
  if (!g.profiles.empty()) {
    if (!is_profiles_file(g.profiles)) r.fail("profiles", "must name a .csv or a .jsonl file");
    require_file(r, "profiles", g.profiles, base_dir);
  }
  r.text("persona", g.persona);
  std::vector<std::string> fields;
  try {
    fields = persona_fields(g.persona);
  } catch (const persona_error& e) {
    r.fail("persona", e.reason);
  }
  std::optional<std::vector<std::string>> known;  // what every profile has, if the file says
  try {
    if (!g.profiles.empty()) known = profile_fields(resolve_path(g.profiles, base_dir));
  } catch (const profile_error& e) {
    r.fail("profiles", e.what());
  }
  for (const std::string& f : fields) {
    if (builtin_persona_field(f)) continue;
    if (g.profiles.empty())
      r.fail("persona", "{" + f + "} needs a profiles file (without one, only {id}, {group} and {index})");
    if (known && std::find(known->begin(), known->end(), f) == known->end())
      r.fail("persona", "{" + f + "} is not a field of " + g.profiles + " (" + joined(*known) + ")");
  }

  r.texts("channels", g.channels);
  for (const std::string& c : g.channels)
    if (std::none_of(world.channels.begin(), world.channels.end(), [&](const channel_spec& w) { return w.name == c; }))
      r.fail("channels", "no channel " + c + " in world.channels");
  r.refuse_unknown();
  return g;
}

workflow_step read_inject(table_reader& r, bool social) {
  inject_action a;
  r.text("action", a.action, true);
  if (social && !is_social_action(a.action)) r.fail("action", not_an_action(a.action));
  r.text("as", a.as);
  if (const toml::node* n = r.find("arguments")) {
    if (!n->is_table()) r.fail("arguments", "must be a table of the action's arguments");
    a.arguments = json_of(r, "arguments", "", *n).as_object();
  }
  r.refuse_unknown();
  return a;
}

workflow_step read_interview(table_reader& r, const std::vector<population_group>& groups) {
  interview i;
  r.text("question", i.question, true);
  r.count("sample", i.sample, 0, max_agents);
  r.text("group", i.group);
  std::size_t agents = 0;
  for (const population_group& g : groups)
    if (i.group.empty() || g.name == i.group) agents += g.count;
  if (agents == 0) r.fail("group", "no population group is named " + i.group);
  if (i.sample > agents)
    r.fail("sample", "must be at most the " + std::to_string(agents) + " agents it is drawn from (0: all of them)");
  r.refuse_unknown();
  return i;
}

workflow_step read_step(table_reader& r, const scenario& s) {
  static constexpr std::string_view kinds[] = {"run", "inject", "interview", "checkpoint"};
  std::vector<std::string_view> present;
  for (const auto& [key, value] : r.table()) {
    if (std::find(std::begin(kinds), std::end(kinds), key.str()) == std::end(kinds))
      r.fail(key.str(), "is not a kind of step (run, inject, interview or checkpoint)");
    present.push_back(key.str());
  }
  if (present.size() != 1)
    r.fail_table("a step is one of run, inject, interview or checkpoint (it has " + std::to_string(present.size()) +
                 ")");
  const std::string_view kind = present.front();
  if (kind == "run") return run_rounds{r.integer("run", 1, 1, 1'000'000'000)};
  if (kind == "checkpoint") {
    bool on = false;
    r.flag("checkpoint", on);
    if (!on) r.fail("checkpoint", "must be true (a step that does nothing is a mistake)");
    return checkpoint{};
  }
  const toml::table* body = r.table(kind);
  table_reader br(*body, r.name(kind), r.file());
  if (kind == "inject") return read_inject(br, s.world.kind == "social");
  return read_interview(br, s.groups);
}

model_price read_price(table_reader& r) {
  model_price p;
  r.number_in("input", p.input, 0, 1e6);
  r.number_in("output", p.output, 0, 1e6);
  r.refuse_unknown();
  return p;
}

// The graph's own parameters against the population it connects.
void check_graph_size(table_reader& world, const scenario& s) {
  const toml::table* t = world.table().get_as<toml::table>("graph");
  if (!t) return;
  table_reader gr(*t, world.name("graph"), world.file());
  std::size_t agents = 0;
  for (const population_group& g : s.groups) agents += g.count;
  const std::string of = " (the population has " + std::to_string(agents) + " agents)";
  if (s.world.graph.kind == graph_kind::barabasi_albert && s.world.graph.m >= agents)
    gr.fail("m", "must be less than the number of agents" + of);
  if (s.world.graph.kind == graph_kind::watts_strogatz && s.world.graph.k >= agents)
    gr.fail("k", "must be less than the number of agents" + of);
}

scenario read(const toml::table& doc, const std::string& base_dir, const std::string& file) {
  scenario s;
  s.base_dir = base_dir;
  table_reader top(doc, "", file);
  top.text("name", s.name);
  if (s.name.empty()) s.name = std::filesystem::path(file).stem().string();
  s.seed = static_cast<std::uint64_t>(top.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  top.count("concurrency", s.concurrency, 1, 100'000'000);
  top.positive("activation_timeout_seconds", s.activation_timeout_seconds, 86'400.0 * 7, "a number of seconds");

  static const toml::table empty;
  const toml::table* world_table = top.table("world");
  table_reader world(world_table ? *world_table : empty, "world", file);
  s.world = read_world(world, base_dir);
  if (const toml::table* t = top.table("clock")) {
    table_reader r(*t, "clock", file);
    s.clock = read_clock(r);
  }

  const auto groups = top.tables("population");
  if (groups.empty()) top.fail("population", "at least one [[population]] group is required");
  std::int64_t agents = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    table_reader r(*groups[i], "population[" + std::to_string(i) + "]", file);
    population_group g = read_group(r, s.world, base_dir);
    if (std::any_of(s.groups.begin(), s.groups.end(), [&](const population_group& o) { return o.name == g.name; }))
      r.fail("name", "another group is already named " + g.name);
    agents += static_cast<std::int64_t>(g.count);
    if (agents > max_agents) r.fail("count", "the population exceeds " + std::to_string(max_agents) + " agents");
    s.groups.push_back(std::move(g));
  }
  check_graph_size(world, s);

  const auto steps = top.tables("workflow");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    table_reader r(*steps[i], "workflow[" + std::to_string(i) + "]", file);
    s.workflow.push_back(read_step(r, s));
  }

  if (const toml::table* t = top.table("prices")) {
    table_reader pr(*t, "prices", file);
    for (const auto& [key, value] : *t) {
      const toml::table* price = pr.table(key.str());
      if (!price) continue;
      table_reader r(*price, pr.name(key.str()), file);
      s.prices[std::string(key.str())] = read_price(r);
    }
  }
  top.refuse_unknown();
  return s;
}

}  // namespace

const std::vector<std::string>& social_actions() {
  static const std::vector<std::string> actions{"post",   "reply",    "repost",       "like",
                                                "follow", "unfollow", "send_message", "do_nothing"};
  return actions;
}

scenario parse_scenario(std::string_view toml_text, std::string base_dir, std::string source_name) {
  try {
    return read(parse_toml(toml_text, source_name), base_dir, source_name);
  } catch (const scenario_error&) {
    throw;
  } catch (const field_error& e) {
    throw scenario_error(e);
  }
}

scenario read_scenario(const std::string& path) {
  const std::optional<std::string> text = file_text(path);
  if (!text) throw scenario_error(path, "", 0, "cannot be read");
  return parse_scenario(*text, std::filesystem::path(path).parent_path().string(), path);
}

}  // namespace troupe
