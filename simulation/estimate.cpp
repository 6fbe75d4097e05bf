#include "simulation/estimate.hpp"

#include "json/json_text.hpp"
#include "simulation/activation.hpp"
#include "simulation/figure_text.hpp"

#include <algorithm>
#include <cmath>

namespace troupe {

namespace json = boost::json;

namespace {

std::vector<double> probabilities(const clock_spec& clock, std::int64_t rounds) {
  std::vector<double> p;
  p.reserve(static_cast<std::size_t>(rounds));
  for (std::int64_t r = 1; r <= rounds; ++r) {
    if (clock.mode == activation_mode::every_round || (clock.mode == activation_mode::events && r > 1))
      p.push_back(1.0);
    else
      p.push_back(activation_probability(clock, r));
  }
  return p;
}

const tool_spec* find_spec(const std::vector<tool_spec>& specs, const std::string& name) {
  for (const auto& t : specs)
    if (t.name == name) return &t;
  return nullptr;
}

// The schemas a group's agents send with every call.
std::int64_t tool_tokens(const population_group& g, const estimate_inputs& in, const token_estimator& est) {
  std::int64_t n = 0;
  auto add = [&](const tool_spec& t) { n += est.text(json_text(to_json(t))); };
  if (g.actions.empty()) {
    for (const auto& t : in.world_actions) add(t);
  } else {
    for (const auto& name : g.actions) {
      const tool_spec* t = find_spec(in.world_actions, name);
      if (!t)
        throw estimate_error("group \"" + g.name + "\" takes the action \"" + name +
                             "\", which the world does not offer");
      add(*t);
    }
  }
  for (const auto& name : g.tools) {
    const tool_spec* t = find_spec(in.other_tools, name);
    if (!t)
      throw estimate_error("group \"" + g.name + "\" names the tool \"" + name +
                           "\", which the estimate was not given");
    add(*t);
  }
  return n;
}

// The agents of `g` an interview step asks (a sample is drawn from all its
// candidates, so each group gets its share).
double asked_in(const scenario& s, const interview& iv, const population_group& g) {
  if (!iv.group.empty() && iv.group != g.name) return 0;
  std::size_t candidates = g.count;
  if (iv.group.empty()) {
    candidates = 0;
    for (const auto& x : s.groups) candidates += x.count;
  }
  if (candidates == 0) return 0;
  const std::size_t asked = iv.sample == 0 ? candidates : std::min(iv.sample, candidates);
  return static_cast<double>(asked) * static_cast<double>(g.count) / static_cast<double>(candidates);
}

double cost_of(const model_price& p, double input_tokens, double output_tokens) {
  return (input_tokens * p.input + output_tokens * p.output) / 1e6;
}

void add_to(group_estimate& total, const group_estimate& g) {
  total.agents += g.agents;
  total.activations += g.activations;
  total.model_calls += g.model_calls;
  total.interview_calls += g.interview_calls;
  total.max_call_input_tokens = std::max(total.max_call_input_tokens, g.max_call_input_tokens);
  total.input_tokens += g.input_tokens;
  total.output_tokens += g.output_tokens;
  total.cost += g.cost;
}

}  // namespace

scenario_estimate estimate_scenario(const scenario& s, const estimate_inputs& in) {
  const token_estimator& est = in.estimator ? *in.estimator : default_estimator();
  const std::int64_t per_message = est.per_message();
  scenario_estimate out;
  out.name = s.name;
  out.rounds = total_rounds(s);
  out.mode = s.clock.mode;
  out.activation_probability = probabilities(s.clock, out.rounds);
  out.upper_bound = s.clock.mode == activation_mode::events && out.rounds > 1;
  for (const auto& step : s.workflow) out.interview_steps += std::holds_alternative<interview>(step) ? 1 : 0;
  out.total.name = "total";

  // The observation an activation commits as its user turn, with a full feed and inbox.
  const std::int64_t observation = in.observation_overhead_tokens +
                                   static_cast<std::int64_t>(s.world.feed_size) * in.tokens_per_post +
                                   static_cast<std::int64_t>(s.world.inbox_size) * in.tokens_per_message + per_message;
  // The rest of a turn: the action's call, the world's result, the closing words.
  const std::int64_t acting = in.action_call_tokens + per_message + in.tool_result_tokens + per_message;
  const std::int64_t turn = observation + acting + in.answer_tokens + per_message;

  bool any_scripted = false, any_model = false;
  std::vector<std::string> unpriced;
  for (const auto& g : s.groups) {
    group_estimate ge;
    ge.name = g.name;
    ge.model = g.model;
    ge.agents = g.count;
    ge.scripted = g.model == "scripted";
    for (double p : out.activation_probability) ge.activations += p * static_cast<double>(g.count);
    if (ge.scripted) {
      any_scripted = true;
      out.groups.push_back(ge);
      add_to(out.total, ge);
      continue;
    }
    any_model = true;
    const auto price = s.prices.find(g.model);
    ge.priced = price != s.prices.end();

    const std::int64_t tools = tool_tokens(g, in, est);
    const std::int64_t persona = g.persona.empty() ? 0 : est.text(g.persona) + per_message;
    const std::int64_t budget = g.context.input_budget();
    // The conversation is cut to the budget, but never below what the
    // current turn holds (the window keeps it whole); the schemas come on top.
    const auto capped = [&](double conversation, std::int64_t floor) {
      return static_cast<double>(tools) + std::min(conversation, static_cast<double>(std::max(budget, floor)));
    };
    const double kept_turns =
        g.context.keep_last_turns == 0 ? HUGE_VAL : static_cast<double>(g.context.keep_last_turns) - 1;
    double earlier = 0;  // an agent's expected activations before the round
    for (std::size_t r = 0; r < out.activation_probability.size(); ++r) {
      const double p = out.activation_probability[r];
      const double history = std::min(earlier, kept_turns) * static_cast<double>(turn);
      const double first = capped(static_cast<double>(persona + observation) + history, persona + observation);
      const double second =
          capped(static_cast<double>(persona + observation + acting) + history, persona + observation + acting);
      const double activations = p * static_cast<double>(g.count);
      ge.input_tokens += activations * (first + second);
      ge.output_tokens += activations * static_cast<double>(in.action_call_tokens + in.answer_tokens);
      const auto first_tokens = static_cast<std::int64_t>(std::llround(first));
      if (r == 0) ge.first_call_input_tokens = first_tokens;
      ge.max_call_input_tokens = std::max(ge.max_call_input_tokens, static_cast<std::int64_t>(std::llround(second)));
      earlier += p;
    }
    ge.model_calls = 2 * ge.activations;
    // An interview is one call on a thread of its own: the question, no history of the world.
    for (const auto& step : s.workflow) {
      const auto* iv = std::get_if<interview>(&step);
      if (!iv) continue;
      const double asked = asked_in(s, *iv, g);
      ge.interview_calls += asked;
      ge.input_tokens += asked * static_cast<double>(tools + persona + est.text(iv->question) + per_message);
      ge.output_tokens += asked * static_cast<double>(in.interview_answer_tokens);
    }
    ge.model_calls += ge.interview_calls;
    if (ge.priced) ge.cost = cost_of(price->second, ge.input_tokens, ge.output_tokens);
    if (!ge.priced) unpriced.push_back(g.model);
    out.groups.push_back(ge);
    add_to(out.total, ge);
  }

  auto& notes = out.notes;
  if (any_model) {
    notes.push_back(
        "2 model calls per activation: the call that takes the action and the call that answers once the world's "
        "result is in (one action per activation assumed); an interview is 1 call.");
    notes.push_back(
        "Input per call: the persona, the tool schemas, the observation with a full feed (" +
        std::to_string(s.world.feed_size) + " posts x " + std::to_string(in.tokens_per_post) + " tokens) and inbox (" +
        std::to_string(s.world.inbox_size) + " messages x " + std::to_string(in.tokens_per_message) +
        " tokens), and the earlier turns the context policy keeps (keep_last_turns - 1, at most the "
        "agent's expected earlier activations, " +
        std::to_string(turn) + " tokens each), the conversation cut to max_input_tokens - reserve_output_tokens.");
    notes.push_back("Output per activation: " + std::to_string(in.action_call_tokens) +
                    " tokens for the action's call, " + std::to_string(in.answer_tokens) + " for the answer; " +
                    std::to_string(in.interview_answer_tokens) + " per interview answer.");
    notes.push_back(
        "Personas are measured as their templates: the profile fields they name count as their placeholders.");
  }
  if (any_scripted) notes.push_back("Scripted groups make no model calls and cost nothing.");
  if (out.upper_bound)
    notes.push_back(
        "An events clock: an upper bound. Round 1 activates with the clock's probability, every later round "
        "counts every agent as reached.");
  std::sort(unpriced.begin(), unpriced.end());
  unpriced.erase(std::unique(unpriced.begin(), unpriced.end()), unpriced.end());
  for (const auto& m : unpriced) notes.push_back("No price for the model \"" + m + "\": its cost counts as $0.");
  return out;
}

}  // namespace troupe

namespace troupe {

namespace {

const char* mode_name(activation_mode m) {
  switch (m) {
    case activation_mode::every_round:
      return "every_round";
    case activation_mode::probability:
      return "probability";
    case activation_mode::events:
      return "events";
  }
  return "?";
}

// Columns padded to their widest cell: names left-aligned, figures right.
std::string text_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& left) {
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c < left.size() && left[c] ? row[c] + pad : pad + row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::vector<std::string> table_row(const group_estimate& g, bool total) {
  const bool no_calls = g.scripted || (total && g.model_calls == 0);
  return {g.name,
          grouped(static_cast<std::int64_t>(g.agents)),
          total ? "" : g.model,
          grouped(g.activations),
          no_calls ? "scripted" : grouped(g.model_calls),
          grouped(g.input_tokens),
          grouped(g.output_tokens),
          g.scripted || g.priced || total ? dollars(g.cost) : "no price"};
}

// The total has no model of its own, nor a first round's call.
json::object group_json(const group_estimate& g, bool total) {
  json::object o{{"name", g.name}};
  if (!total) {
    o["model"] = g.model;
    o["scripted"] = g.scripted;
    o["priced"] = g.priced;
  }
  o["agents"] = g.agents;
  o["activations"] = g.activations;
  o["model_calls"] = g.model_calls;
  o["interview_calls"] = g.interview_calls;
  if (!total) o["first_call_input_tokens"] = g.first_call_input_tokens;
  o["max_call_input_tokens"] = g.max_call_input_tokens;
  o["input_tokens"] = g.input_tokens;
  o["output_tokens"] = g.output_tokens;
  o["cost"] = g.cost;
  return o;
}

}  // namespace

std::string format_estimate(const scenario_estimate& e) {
  std::string out = "Estimate for \"" + e.name + "\": " + grouped(static_cast<std::int64_t>(e.total.agents)) +
                    " agents, " + grouped(e.rounds) + " rounds, " + mode_name(e.mode) + " clock" +
                    (e.upper_bound ? " (an upper bound)" : "") + "\n";
  if (!e.activation_probability.empty()) {
    out += "Expected activations per round:";
    constexpr std::size_t shown = 24;
    for (std::size_t r = 0; r < e.activation_probability.size() && r < shown; ++r)
      out += " " + grouped(e.activation_probability[r] * static_cast<double>(e.total.agents));
    if (e.activation_probability.size() > shown)
      out += " ... (" + std::to_string(e.activation_probability.size() - shown) + " more)";
    out += "\n";
  }
  out += "\n";
  std::vector<std::vector<std::string>> rows{
      {"group", "agents", "model", "activations", "model calls", "input tokens", "output tokens", "cost"}};
  for (const auto& g : e.groups) rows.push_back(table_row(g, false));
  rows.push_back(table_row(e.total, true));
  out += text_table(rows, {true, false, true});
  bool per_call_header = false;
  for (const auto& g : e.groups) {
    if (g.scripted) continue;
    if (!per_call_header) out += "\nInput tokens per call (first round, largest):\n";
    per_call_header = true;
    out += "  " + g.name + ": " + grouped(g.first_call_input_tokens) + ", " + grouped(g.max_call_input_tokens) + "\n";
  }
  if (!e.notes.empty()) out += "\n";
  for (const auto& n : e.notes) out += "- " + n + "\n";
  return out;
}

json::object estimate_json(const scenario_estimate& e) {
  json::array probability;
  for (double p : e.activation_probability) probability.push_back(p);
  json::array groups;
  for (const auto& g : e.groups) groups.push_back(group_json(g, false));
  json::array notes;
  for (const auto& n : e.notes) notes.push_back(json::string(n));
  return json::object{{"name", e.name},
                      {"agents", e.total.agents},
                      {"rounds", e.rounds},
                      {"clock", mode_name(e.mode)},
                      {"upper_bound", e.upper_bound},
                      {"activation_probability", std::move(probability)},
                      {"interview_steps", e.interview_steps},
                      {"groups", std::move(groups)},
                      {"total", group_json(e.total, true)},
                      {"notes", std::move(notes)}};
}

}  // namespace troupe
