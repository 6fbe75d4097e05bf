#include "simulation/run_scenario.hpp"

#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/detail/text.hpp"
#include "runtime/llm/endpoint_pool.hpp"
#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/net/http_client.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/memory_store.hpp"
#include "runtime/tools/builtin_tools.hpp"
#include "simulation/activation.hpp"
#include "simulation/event_log.hpp"
#include "simulation/percentile.hpp"
#include "simulation/population.hpp"
#include "world/seeded_random.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace troupe {

namespace json = boost::json;

namespace {

using clk = std::chrono::steady_clock;

double ms_between(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Interventions sort after the agent's own actions of the round.
constexpr std::uint32_t injected_seq = 0x8000'0000U;

// Request ids say what a request is, so that a scripted model, a world tool
// and a resumed run can tell from the id alone: "r{round}/a{index}" for an
// activation, "i{step}/a{index}" for an interview, each followed by
// "/{attempt}" when a resumed run asks again.
std::string activation_request_id(std::int64_t round, std::uint32_t agent, int attempt) {
  std::string id = "r" + std::to_string(round) + "/a" + std::to_string(agent);
  if (attempt > 1) id += "/" + std::to_string(attempt);
  return id;
}

std::string interview_request_id(std::size_t step, std::uint32_t agent, int attempt) {
  std::string id = "i" + std::to_string(step) + "/a" + std::to_string(agent);
  if (attempt > 1) id += "/" + std::to_string(attempt);
  return id;
}

struct parsed_request_id {
  char kind = 0;  // 'r' or 'i'
  std::int64_t number = 0;
  std::uint32_t agent = 0;
};

std::optional<parsed_request_id> parse_request_id(std::string_view id) {
  parsed_request_id out;
  if (id.size() < 4 || (id[0] != 'r' && id[0] != 'i')) return std::nullopt;
  out.kind = id[0];
  const char* p = id.data() + 1;
  const char* end = id.data() + id.size();
  auto n = std::from_chars(p, end, out.number);
  if (n.ec != std::errc{} || end - n.ptr < 3 || n.ptr[0] != '/' || n.ptr[1] != 'a') return std::nullopt;
  auto a = std::from_chars(n.ptr + 2, end, out.agent);
  if (a.ec != std::errc{} || (a.ptr != end && *a.ptr != '/')) return std::nullopt;
  return out;
}

json::object action_json(const world_action& a, const std::vector<std::string>& ids) {
  json::object o{{"event", "action"},
                 {"round", a.round},
                 {"agent", a.key.agent == operator_agent ? std::string("@operator") : ids[a.key.agent]},
                 {"seq", a.key.seq},
                 {"action", a.name},
                 {"arguments", a.arguments},
                 {"result", a.result}};
  return o;
}

world_action action_from_json(const json::object& o, const std::unordered_map<std::string, std::uint32_t>& index) {
  world_action a;
  a.round = o.at("round").to_number<std::int64_t>();
  const std::string agent(o.at("agent").as_string());
  a.key.agent = agent == "@operator" ? operator_agent : index.at(agent);
  a.key.seq = o.at("seq").to_number<std::uint32_t>();
  a.name = std::string(o.at("action").as_string());
  a.arguments = o.at("arguments").as_object();
  a.result = o.at("result");
  return a;
}

// "Day 1, 08:00.\n": when in the simulated days a round runs (the world's
// observation says which round it is, if it cares to).
std::string clock_line(const clock_spec& clock, std::int64_t round) {
  const std::int64_t minutes = clock.start_hour * 60 + (round - 1) * clock.minutes_per_round;
  char line[64];
  std::snprintf(line, sizeof line, "Day %lld, %02lld:%02lld.\n", static_cast<long long>(minutes / 1440 + 1),
                static_cast<long long>(minutes / 60 % 24), static_cast<long long>(minutes % 60));
  return line;
}

// The scripted stand-in for a model: what a round's policy decides, as tool
// calls, then a short answer once their results are in. Its usage counts
// what it reads this call (the system prompt and the newest message), not
// the history before it: a resumed run, whose agents' threads keep an
// attempt the kill cut short, then reports the tokens an uninterrupted one
// does.
scripted_reply scripted_turn(const llm_stream& s,
                             const std::function<std::vector<policy_action>(const parsed_request_id&)>& decide) {
  std::int64_t chars = static_cast<std::int64_t>(s.messages.back().content.size());
  if (s.messages.front().role == "system") chars += static_cast<std::int64_t>(s.messages.front().content.size());
  const token_usage usage{chars / 4 + 1, 12};
  const auto id = parse_request_id(s.request_id);
  if (!id) return scripted_reply::text("I have nothing to add.", usage);
  if (id->kind == 'i')
    return scripted_reply::text(
        "Agent a" + std::to_string(id->agent) + " answers: " + std::string(shortened(s.messages.back().content, 80)),
        usage);
  if (s.messages.back().role == "tool") return scripted_reply::text("Done for this round.", usage);
  std::vector<tool_call> calls;
  for (auto& a : decide(*id))
    calls.push_back(
        tool_call{"call-" + std::to_string(calls.size() + 1), std::move(a.name), std::move(a.arguments), std::nullopt});
  if (calls.empty()) return scripted_reply::text("Nothing to do this round.", usage);
  return scripted_reply::tools(std::move(calls), usage);
}

class scenario_run {
 public:
  scenario_run(const scenario& s, const scenario_run_options& options, scenario_progress& progress)
      : s_(s), options_(options), progress_(progress), population_(build_population(s)) {
    for (std::uint32_t i = 0; i < population_.size(); ++i) index_.emplace(population_[i].id, i);
    ids_.reserve(population_.size());
    for (const auto& m : population_) ids_.push_back(m.id);
    slots_.resize(population_.size());
    world_ = make_world();
    if (auto p = options_.policies.find(s_.world.kind); p != options_.policies.end())
      policy_ = p->second;
    else if (s_.world.kind == "social")
      policy_ = social_policy;
    world_thread_id_ = "simulation:" + s_.name + ":world";
  }

  scenario_report run() {
    const auto started = clk::now();
    report_.name = s_.name;
    report_.agents = population_.size();
    std::size_t first_step = 0;
    std::int64_t rounds_into_step = 0;
    if (options_.resume) {
      resume(first_step, rounds_into_step);
      if (first_step >= workflow().size()) {
        report_.finished_before = true;
        return report_;
      }
    } else {
      refuse_a_run_already_stored();
    }
    log_.open(options_.event_log, options_.resume ? std::optional<std::uint64_t>(log_bytes_) : std::nullopt);
    if (options_.resume) {
      commit_resumed();
    } else {
      log_.write(json::object{{"event", "run"},
                              {"name", s_.name},
                              {"seed", s_.seed},
                              {"agents", population_.size()},
                              {"world", s_.world.kind}});
      // Committed before any agent is asked, so that a run killed in its
      // first round resumes, and a resume checks it continues this scenario.
      commit_step("world_started", json::object{{"step", 0}, {"scenario", fingerprint()}});
    }

    runtime_options ro;
    // Without a store of the run's own, the agents' threads stay in memory
    // in the compact form, and each agent unloads its thread between
    // activations (agent_specs): a million agents' finished rounds take
    // their text and a few bytes an entry, not 224 bytes an entry.
    ro.store = options_.store ? options_.store : std::make_shared<memory_store>(memory_form::compact);
    ro.seed = s_.seed;
    ro.scheduler_threads = options_.scheduler_threads;
    // A resumed run is the same owner as the run it continues: it takes
    // its agents' threads back at once instead of waiting out their leases.
    ro.owner_id = "simulation:" + s_.name;
    runtime rt(ro);
    for (tool& t : builtin_tools()) rt.tools().add(std::move(t));
    register_world_tools(rt);
    const auto spawn_started = clk::now();
    agents_ = rt.spawn_agents(agent_specs());
    report_.spawn_seconds = ms_between(spawn_started, clk::now()) / 1000;

    const auto& steps = workflow();
    for (std::size_t step = first_step; step < steps.size() && !stopping(); ++step) {
      std::visit([&](const auto& st) { run_step(step, st, step == first_step ? rounds_into_step : 0); }, steps[step]);
    }
    rt.shutdown();
    log_.flush();
    report_.seconds = ms_between(started, clk::now()) / 1000;
    double round_seconds = 0;
    for (const auto& r : report_.per_round) round_seconds += r.seconds;
    if (round_seconds > 0) report_.activations_per_second = static_cast<double>(report_.activations) / round_seconds;
    report_.stopped = stopping();
    return report_;
  }

 private:
  struct slot {
    std::vector<world_action> actions;  // accepted this round, in order
    std::vector<json::object> refusals;
    std::uint32_t attempted = 0;  // actions tried this round: the next one's seq
    json::object observation;     // while the activation runs, for the scripted policy
    std::optional<reply> outcome;
    std::optional<request> running;  // while it runs
    double latency_ms = 0;
  };

  const std::vector<workflow_step>& workflow() const {
    static const std::vector<workflow_step> one_round{run_rounds{1}};
    return s_.workflow.empty() ? one_round : s_.workflow;
  }

  bool stopping() const { return options_.stop && options_.stop->load(); }

  // Whether the events reach anything: the event log's file, or the bytes
  // it counts for the store's record of a step.
  bool recording() const { return !options_.event_log.empty() || options_.store; }

  std::unique_ptr<world> make_world() {
    if (auto f = options_.worlds.find(s_.world.kind); f != options_.worlds.end()) {
      auto w = f->second(s_);
      if (!w) throw scenario_run_error("the world factory for \"" + s_.world.kind + "\" made no world");
      w->populate(ids_);
      return w;
    }
    if (s_.world.kind == "social") return make_social_world(s_, population_);
    throw scenario_run_error("unknown world \"" + s_.world.kind + "\": the program registered no world by that name");
  }

  std::vector<agent_spec> agent_specs() {
    std::vector<std::string> all_actions;
    for (const auto& a : world_->actions()) all_actions.push_back(a.name);
    std::vector<std::shared_ptr<llm_provider>> providers;
    for (std::size_t g = 0; g < s_.groups.size(); ++g) providers.push_back(group_provider(g));
    std::vector<agent_spec> specs;
    specs.reserve(population_.size());
    for (auto& m : population_) {
      const population_group& g = s_.groups[m.group];
      agent_spec spec;
      spec.id = m.id;
      spec.model = g.model == "scripted" ? "scripted:" + s_.world.kind : g.model;
      // Nothing reads a persona after its agent is spawned: one copy fewer an agent.
      spec.system_prompt = std::move(m.persona);
      spec.tools = g.actions.empty() ? all_actions : g.actions;
      spec.tools.insert(spec.tools.end(), g.tools.begin(), g.tools.end());
      spec.max_iterations = g.max_iterations;
      spec.context = g.context;
      spec.provider = providers[m.group];
      // One action at a time: an agent's actions of a round get their order
      // (and the ids the world derives from it) from the model's order.
      spec.max_parallel_tools = 1;
      spec.request_deadline =
          std::chrono::milliseconds(static_cast<std::int64_t>(s_.activation_timeout_seconds * 1000));
      spec.restart = restart_policy::transient;
      // In the run's own compact store an agent's thread waits between
      // activations; a store the program gave (SQLite, PostgreSQL) would
      // be read back whole at every activation, so there it stays loaded.
      if (!options_.store) spec.max_loaded_threads = 0;
      specs.push_back(std::move(spec));
    }
    return specs;
  }

  std::shared_ptr<llm_provider> group_provider(std::size_t g) {
    const population_group& group = s_.groups[g];
    if (group.model == "scripted") {
      if (!policy_)
        throw scenario_run_error("group \"" + group.name + "\" is scripted, but the world \"" + s_.world.kind +
                                 "\" has no scripted policy");
      return std::make_shared<scripted_provider>([this, g](const llm_stream& st) {
        return scripted_turn(st, [&](const parsed_request_id& id) {
          policy_input in;
          in.seed = s_.seed;
          in.round = id.number;
          in.agent = id.agent;
          in.agent_id = &ids_[id.agent];
          in.weights = &s_.groups[g].policy;
          in.observation = &slots_[id.agent].observation;
          in.agent_ids = &ids_;
          return policy_(in);
        });
      });
    }
    if (!group.endpoints.empty()) {
      // The group's calls spread over its endpoints, each under its own cap;
      // a 429 pauses that endpoint for its Retry-After (endpoint_pool.hpp).
      std::vector<http_endpoint> endpoints;
      for (const auto& e : group.endpoints) {
        std::string key;
        if (!e.api_key_env.empty()) {
          const char* v = std::getenv(e.api_key_env.c_str());
          if (!v || !*v)
            throw scenario_run_error("group \"" + group.name + "\": the endpoint " + e.url + " takes its key from $" +
                                     e.api_key_env + ", which is not set");
          key = v;
        }
        endpoints.push_back({e.url, std::move(key), e.max_concurrency});
      }
      http_settings settings;
      settings.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(s_.activation_timeout_seconds * 1000));
      if (!http_) http_ = std::make_shared<http_client>();
      return std::make_shared<endpoint_pool>(http_pool_members(endpoints, settings, http_));
    }
    if (!options_.provider)
      throw scenario_run_error("group \"" + group.name + "\" names the model \"" + group.model +
                               "\", but the run has no model provider and the group lists no endpoints");
    return options_.provider;
  }

  void register_world_tools(runtime& rt) {
    for (const tool_spec& spec : world_->actions()) {
      tool t;
      t.spec = spec;
      t.blocking = false;
      t.retry.max_attempts = 1;
      t.run = [this, name = spec.name](const json::object& args, const tool_context& ctx) {
        return act(name, args, ctx);
      };
      rt.tools().add(std::move(t));
    }
  }

  // A world tool's call: checked against the round's world, kept for the
  // round's end. Only an agent's own activation acts on the world; the
  // agent's tools run one at a time, so its slot has one writer.
  json::value act(const std::string& name, const json::object& args, const tool_context& ctx) {
    const auto id = parse_request_id(ctx.request_id);
    const auto agent = index_.find(ctx.agent_id);
    if (agent == index_.end() || !id) throw tool_failure("not_in_simulation", "only the simulation's agents act");
    if (id->kind != 'r') throw tool_failure("not_now", "an interview does not act on the world: answer in words");
    std::shared_lock open(closing_);
    if (id->number != round_.load() || !round_open_.load())
      throw tool_failure("round_over", "round " + std::to_string(id->number) + " is over");
    slot& sl = slots_[agent->second];
    world_action a;
    a.round = id->number;
    a.key = {agent->second, sl.attempted++};
    a.name = name;
    a.arguments = args;
    try {
      a.result = world_->check(a);
    } catch (const tool_failure& refused) {
      sl.refusals.push_back(json::object{{"event", "refused"},
                                         {"round", a.round},
                                         {"agent", ids_[a.key.agent]},
                                         {"seq", a.key.seq},
                                         {"action", a.name},
                                         {"arguments", a.arguments},
                                         {"error", json::object{{"type", refused.type}, {"message", refused.what()}}}});
      throw;
    }
    json::value result = a.result;
    sl.actions.push_back(std::move(a));
    return result;
  }

  void run_step(std::size_t step, const run_rounds& r, std::int64_t done) {
    for (std::int64_t k = done; k < r.rounds && !stopping(); ++k) run_round(step, k + 1);
  }

  void run_step(std::size_t step, const inject_action& inj, std::int64_t) {
    world_action a;
    a.round = round_.load() + 1;
    if (inj.as.empty()) {
      a.key = {operator_agent, static_cast<std::uint32_t>(pending_injections_.size())};
    } else {
      auto who = index_.find(inj.as);
      if (who == index_.end())
        throw scenario_run_error("workflow step " + std::to_string(step + 1) + ": inject as \"" + inj.as +
                                 "\": no such agent");
      a.key = {who->second, injected_seq + static_cast<std::uint32_t>(pending_injections_.size())};
    }
    a.name = inj.action;
    a.arguments = inj.arguments;
    json::object event{{"event", "intervention"},
                       {"step", step + 1},
                       {"round", a.round},
                       {"action", a.name},
                       {"as", inj.as.empty() ? std::string("@operator") : inj.as},
                       {"arguments", a.arguments}};
    try {
      a.result = world_->check(a);
      event["result"] = a.result;
      pending_injections_.push_back(a);
    } catch (const tool_failure& refused) {
      event["error"] = json::object{{"type", refused.type}, {"message", refused.what()}};
    }
    log_.write(event);
    json::object record{{"step", step + 1}, {"event", event}};
    commit_step("world_step", std::move(record));
  }

  void run_step(std::size_t step, const interview& iv, std::int64_t) {
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t i = 0; i < population_.size(); ++i)
      if (iv.group.empty() || s_.groups[population_[i].group].name == iv.group) candidates.push_back(i);
    const auto sample = sample_agents(candidates, iv.sample, s_.seed, 0x696e7465727669ULL + step);
    std::vector<std::optional<reply>> answers(sample.size());
    std::mutex m;
    std::condition_variable cv;
    std::size_t in_flight = 0;
    for (std::size_t k = 0; k < sample.size(); ++k) {
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return in_flight < std::max<std::size_t>(1, s_.concurrency); });
        ++in_flight;
      }
      ask_options o;
      o.thread_id = ids_[sample[k]] + ":interview";
      o.request_id = interview_request_id(step + 1, sample[k], step == interrupted_step_ ? resume_attempt_ : 1);
      o.on_reply = [&, k](const reply& r) {
        std::lock_guard lock(m);
        answers[k] = r;
        --in_flight;
        cv.notify_all();
      };
      agents_[sample[k]].ask(iv.question, std::move(o));
    }
    {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return in_flight == 0; });
    }
    for (std::size_t k = 0; k < sample.size(); ++k) {
      json::object event{{"event", "interview"},
                         {"step", step + 1},
                         {"round", round_.load()},
                         {"agent", ids_[sample[k]]},
                         {"question", iv.question}};
      add_outcome(event, *answers[k]);
      log_.write(event);
    }
    report_.interviews += sample.size();
    commit_step("world_step", json::object{{"step", step + 1}});
  }

  void run_step(std::size_t step, const checkpoint&, std::int64_t) {
    log_.write(json::object{{"event", "checkpoint"}, {"step", step + 1}, {"round", round_.load()}});
    commit_step("world_step", json::object{{"step", step + 1}});
  }

  static void add_outcome(json::object& event, const reply& r) {
    if (const auto* text = std::get_if<std::string>(&r.outcome)) {
      event["answer"] = *text;
    } else {
      const auto& e = std::get<error_info>(r.outcome);
      event["error"] = json::object{{"type", e.type}, {"message", e.message}};
    }
    event["input_tokens"] = r.usage.input_tokens;
    event["output_tokens"] = r.usage.output_tokens;
  }

  double cost_of(const population_group& g, const token_usage& u) const {
    auto p = s_.prices.find(g.model);
    if (p == s_.prices.end()) return 0;
    return (static_cast<double>(u.input_tokens) * p->second.input +
            static_cast<double>(u.output_tokens) * p->second.output) /
           1e6;
  }

  void run_round(std::size_t step, std::int64_t round_in_step) {
    const std::int64_t round = round_.load() + 1;
    const auto started = clk::now();
    const auto active =
        activated_agents(s_.clock, s_.seed, round, static_cast<std::uint32_t>(population_.size()), reached_);
    round_summary summary;
    summary.round = round;
    summary.hour = hour_of_round(s_.clock, round);
    summary.active = active.size();
    progress_.round = round;
    progress_.active = active.size();
    log_.write(json::object{{"event", "round"}, {"round", round}, {"hour", summary.hour}, {"active", active.size()}});

    round_.store(round);
    round_open_.store(true);
    activate(round, active);
    {
      std::unique_lock closed(closing_);
      round_open_.store(false);
    }
    if (stopping()) return;  // the round is not applied: a resumed run runs it again

    // The round's actions in key order: each agent's own, then what was
    // injected in its name, then the operator's.
    std::vector<world_action> actions;
    std::vector<double> latencies;
    latencies.reserve(active.size());
    for (std::uint32_t i : active) {
      slot& sl = slots_[i];
      if (recording()) {
        // The world is as the round found it until apply: observing again
        // gives what the agent was shown, without holding every agent's
        // observation through the round.
        json::object event{{"event", "activation"},
                           {"round", round},
                           {"agent", ids_[i]},
                           {"observation", world_->observe(i, round).data}};
        add_outcome(event, *sl.outcome);
        log_.write(event);
        for (auto& refusal : sl.refusals) log_.write(refusal);
      }
      const population_group& g = s_.groups[population_[i].group];
      summary.input_tokens += sl.outcome->usage.input_tokens;
      summary.output_tokens += sl.outcome->usage.output_tokens;
      summary.cost += cost_of(g, sl.outcome->usage);
      if (!sl.outcome->ok()) {
        ++summary.failed;
        ++report_.errors_by_type[std::get<error_info>(sl.outcome->outcome).type];
      }
      latencies.push_back(sl.latency_ms);
      summary.refused += sl.refusals.size();
      for (auto& a : sl.actions) actions.push_back(std::move(a));
      sl = slot{};
    }
    for (auto& a : pending_injections_) a.round = round;
    actions.insert(actions.end(), pending_injections_.begin(), pending_injections_.end());
    pending_injections_.clear();
    std::stable_sort(actions.begin(), actions.end(),
                     [](const world_action& a, const world_action& b) { return a.key < b.key; });
    for (const auto& a : actions) {
      if (recording()) log_.write(action_json(a, ids_));
      ++summary.actions[a.name];
    }
    world_->apply(round, active, actions);
    reached_ = world_->reached();
    summary.world = world_->round_figures();
    summary.seconds = ms_between(started, clk::now()) / 1000;
    summary.latency_p50_ms = percentile(latencies, 0.5);
    summary.latency_p99_ms = percentile(latencies, 0.99);

    json::object end{{"event", "round_end"},
                     {"round", round},
                     {"active", summary.active},
                     {"failed", summary.failed},
                     {"refused", summary.refused}};
    json::object by_kind;
    for (const auto& [k, n] : summary.actions) by_kind[k] = n;
    end["actions"] = std::move(by_kind);
    end["input_tokens"] = summary.input_tokens;
    end["output_tokens"] = summary.output_tokens;
    end["world"] = summary.world;
    log_.write(end);

    // The round as the store keeps it (a resumed run applies it again);
    // without a store nothing reads it.
    json::array applied;
    json::array woke;
    if (options_.store) {
      for (const auto& a : actions) applied.push_back(action_json(a, ids_));
      for (auto i : active) woke.push_back(i);
    }
    commit_step("world_round", json::object{{"step", step + 1},
                                            {"round", round},
                                            {"round_in_step", round_in_step},
                                            {"activated", std::move(woke)},
                                            {"actions", std::move(applied)}});

    report_.rounds = round;
    report_.activations += active.size();
    report_.activations_failed += summary.failed;
    for (const auto& [k, n] : summary.actions) report_.actions[k] += n;
    report_.input_tokens += summary.input_tokens;
    report_.output_tokens += summary.output_tokens;
    report_.cost += summary.cost;
    report_.per_round.push_back(std::move(summary));
  }

  // Asks every active agent, at most `concurrency` at once, and waits for
  // every answer (or error: one failed activation never stops a round).
  // Once the cap is reached, the asking waits until `refill` answers have
  // come back and then asks that many: woken at every answer, it would take
  // a context switch (and its futex calls) an activation, on the same cores
  // the agents need.
  void activate(std::int64_t round, const std::vector<std::uint32_t>& active) {
    std::mutex m;
    std::condition_variable cv;
    std::size_t in_flight = 0;
    const std::size_t cap = std::max<std::size_t>(1, s_.concurrency);
    const std::size_t refill = std::max<std::size_t>(1, cap / 16);
    for (std::uint32_t i : active) {
      {
        std::unique_lock lock(m);
        if (in_flight >= cap) cv.wait(lock, [&] { return in_flight + refill <= cap || stopping(); });
        if (stopping()) break;
        ++in_flight;
      }
      slot& sl = slots_[i];
      world_observation seen = world_->observe(i, round);
      sl.observation = std::move(seen.data);
      std::string text =
          clock_line(s_.clock, round) +
          (seen.empty ? std::string("Nothing new reached you since you last looked.") : std::move(seen.text));
      ask_options o;
      o.request_id = activation_request_id(round, i, attempt_of(round));
      o.observation = observation_origin{s_.world.kind, round};
      const auto asked = clk::now();
      o.on_reply = [this, &m, &cv, &in_flight, &sl, asked, cap, refill, group = population_[i].group](const reply& r) {
        sl.latency_ms = ms_between(asked, clk::now());
        ++progress_.activations_done;
        if (!r.ok()) ++progress_.activations_failed;
        progress_.actions += sl.actions.size();
        progress_.input_tokens += r.usage.input_tokens;
        progress_.output_tokens += r.usage.output_tokens;
        progress_.cost_microdollars += static_cast<std::int64_t>(cost_of(s_.groups[group], r.usage) * 1e6);
        std::lock_guard lock(m);
        sl.outcome = r;
        sl.observation = {};  // the scripted policy has read it
        // Held only to cancel it: a finished request's state (its reply,
        // callbacks, lock) would stay for every agent until the round's end.
        // The broker holds its own reference while this runs.
        sl.running.reset();
        --in_flight;
        if (in_flight + refill == cap || in_flight == 0) cv.notify_all();
      };
      request running = agents_[i].ask(std::move(text), std::move(o));
      std::lock_guard lock(m);
      if (!sl.outcome) sl.running = std::move(running);
    }
    std::unique_lock lock(m);
    if (stopping())
      for (std::uint32_t i : active)
        if (slots_[i].running && !slots_[i].outcome) slots_[i].running->cancel("the simulation was stopped");
    cv.wait(lock, [&] { return in_flight == 0; });
  }

  int attempt_of(std::int64_t round) const { return round == interrupted_round_ ? resume_attempt_ : 1; }

  // A round boundary, and every other step, is committed as an entry of the
  // world's thread, after the agents' threads (their entries are committed
  // before their answers reach the run). The entry records where the event
  // log ends, so a resumed run cuts off what came after it.
  void commit_step(std::string kind, json::object payload) {
    log_.flush();
    payload["log_bytes"] = log_.bytes();
    if (!options_.store) return;
    if (!world_thread_) world_thread_.emplace(world_thread_id_, wall_clock_ms());
    const std::uint64_t rev = world_thread_->rev();
    world_thread_->append(entry_draft(std::move(kind), std::move(payload)), wall_clock_ms(), world_ids_);
    auto done = options_.store->append(*world_thread_, rev);
    if (!done)
      throw scenario_run_error("committing the world's round to the store failed (" + done.error().type +
                               "): " + done.error().message);
  }

  // Rebuilds the world from its committed rounds and finds where the
  // workflow stopped.
  void resume(std::size_t& first_step, std::int64_t& rounds_into_step) {
    if (!options_.store) throw scenario_run_error("--resume needs a durable store (sqlite: or postgres:)");
    auto loaded = options_.store->load(world_thread_id_);
    if (!loaded)
      throw scenario_run_error("nothing to resume: the store holds no run named \"" + s_.name + "\" (" +
                               loaded.error().message + ")");
    world_thread_.emplace(std::move(*loaded));
    std::int64_t last_round = 0;
    int earlier_resumes = 0;  // since the last committed step: each asked the interrupted step again
    for (const entry& e : world_thread_->entries()) {
      const json::object p = e.payload.to_json();
      if (e.kind == "world_resumed") {
        ++earlier_resumes;
        continue;
      }
      earlier_resumes = 0;
      if (e.kind == "world_started") {
        check_fingerprint(p.at("scenario").as_object());
        log_bytes_ = p.at("log_bytes").to_number<std::uint64_t>();
        continue;
      }
      first_step = static_cast<std::size_t>(p.at("step").to_number<std::int64_t>()) - 1;
      log_bytes_ = p.at("log_bytes").to_number<std::uint64_t>();
      if (e.kind == "world_round") {
        last_round = p.at("round").to_number<std::int64_t>();
        rounds_into_step = p.at("round_in_step").to_number<std::int64_t>();
        std::vector<std::uint32_t> activated;
        for (const auto& i : p.at("activated").as_array()) activated.push_back(i.to_number<std::uint32_t>());
        std::vector<world_action> actions;
        for (const auto& a : p.at("actions").as_array()) actions.push_back(action_from_json(a.as_object(), index_));
        world_->apply(last_round, activated, actions);
        reached_ = world_->reached();
        pending_injections_.clear();
      } else {
        rounds_into_step = 0;
        ++first_step;  // that step is done
        if (const auto* ev = p.if_contains("event"); ev && ev->as_object().contains("result")) {
          const json::object& i = ev->as_object();
          world_action a;
          a.round = i.at("round").to_number<std::int64_t>();
          const std::string as(i.at("as").as_string());
          a.key = as == "@operator" ? action_key{operator_agent, static_cast<std::uint32_t>(pending_injections_.size())}
                                    : action_key{index_.at(as),
                                                 injected_seq + static_cast<std::uint32_t>(pending_injections_.size())};
          a.name = std::string(i.at("action").as_string());
          a.arguments = i.at("arguments").as_object();
          a.result = i.at("result");
          pending_injections_.push_back(std::move(a));
        }
      }
    }
    // A run_rounds step whose last round was committed is done too.
    if (first_step < workflow().size())
      if (const auto* r = std::get_if<run_rounds>(&workflow()[first_step]); r && rounds_into_step >= r->rounds) {
        ++first_step;
        rounds_into_step = 0;
      }
    round_.store(last_round);
    report_.resumed_after = last_round;
    report_.rounds = last_round;
    // Agents may have begun (or finished) the next round or interview
    // before the kill: their threads keep that attempt, and it is asked
    // again under a request id of its own (one more than every earlier
    // resume of it used), so no thread holds one id twice.
    interrupted_round_ = last_round + 1;
    interrupted_step_ = first_step;
    resume_attempt_ = earlier_resumes + 2;
  }

  // Recorded before anything is asked again: a resume killed in its turn
  // leaves the next one a higher attempt.
  void commit_resumed() {
    const std::uint64_t rev = world_thread_->rev();
    world_thread_->append(entry_draft("world_resumed", json::object{{"attempt", resume_attempt_}}), wall_clock_ms(),
                          world_ids_);
    auto done = options_.store->append(*world_thread_, rev);
    if (!done)
      throw scenario_run_error("committing the resume to the store failed (" + done.error().type +
                               "): " + done.error().message);
  }

  // What a resumed run must share with the run it continues: the same
  // population doing the same workflow in the same world, with the same seed.
  json::object fingerprint() const {
    json::array groups;
    for (const auto& g : s_.groups)
      groups.push_back(json::object{{"name", g.name}, {"count", g.count}, {"model", g.model}});
    return json::object{{"seed", s_.seed},
                        {"agents", population_.size()},
                        {"groups", std::move(groups)},
                        {"world", s_.world.kind},
                        {"steps", workflow().size()}};
  }

  void check_fingerprint(const json::object& stored) const {
    for (const auto& [key, value] : fingerprint()) {
      const auto* then = stored.if_contains(key);
      if (then && *then == value) continue;
      throw scenario_mismatch("the store's run \"" + s_.name + "\" was started with another scenario: its " +
                              std::string(key) + " was " + (then ? json_text(*then) : std::string("unset")) + ", now " +
                              json_text(value) + " (resume with the scenario file and --seed it started with)");
    }
  }

  // A fresh run into a store that holds a run by its name would mix their
  // threads and fail at its first commit.
  void refuse_a_run_already_stored() {
    if (!options_.store) return;
    if (options_.store->load(world_thread_id_))
      throw scenario_run_error("the store already holds a run named \"" + s_.name +
                               "\": continue it with --resume, or run into another store");
  }

  const scenario& s_;
  const scenario_run_options& options_;
  std::shared_ptr<http_client> http_;  // shared by every group's endpoints
  scenario_progress& progress_;
  std::vector<population_member> population_;
  std::vector<std::string> ids_;
  std::unordered_map<std::string, std::uint32_t> index_;
  std::unique_ptr<world> world_;
  policy_function policy_;
  std::vector<slot> slots_;
  std::vector<agent> agents_;
  std::vector<std::uint32_t> reached_;
  std::vector<world_action> pending_injections_;
  std::atomic<std::int64_t> round_{0};
  std::atomic<bool> round_open_{false};
  event_log log_;
  std::uint64_t log_bytes_ = 0;
  std::string world_thread_id_;
  std::optional<thread> world_thread_;
  random_ids world_ids_{0x776f726c64ULL};
  std::int64_t interrupted_round_ = 0;
  std::size_t interrupted_step_ = static_cast<std::size_t>(-1);
  int resume_attempt_ = 1;
  // Held shared by every world action, exclusively while a round closes: an
  // activation that timed out cannot add an action its round no longer takes.
  std::shared_mutex closing_;
  scenario_report report_;
};

}  // namespace

std::vector<tool_spec> scenario_actions(const scenario& s, const scenario_run_options& options) {
  if (auto f = options.worlds.find(s.world.kind); f != options.worlds.end()) {
    auto w = f->second(s);
    if (!w) throw scenario_run_error("the world factory for \"" + s.world.kind + "\" made no world");
    return w->actions();
  }
  if (s.world.kind == "social") {
    scenario bare = s;
    bare.world.graph = {};  // the actions do not depend on who follows whom
    return make_social_world(bare, {})->actions();
  }
  throw scenario_run_error("unknown world \"" + s.world.kind + "\": the program registered no world by that name");
}

std::string population_agent_id(const std::string& group, std::size_t n) { return group + "-" + std::to_string(n); }

scenario_report run_scenario(const scenario& s, const scenario_run_options& options, scenario_progress& progress) {
  scenario_run run(s, options, progress);
  return run.run();
}

}  // namespace troupe
