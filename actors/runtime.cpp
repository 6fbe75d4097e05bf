#include "actors/runtime.hpp"

#include "actors/detail/agent_actor.hpp"
#include "actors/detail/agent_tool.hpp"
#include "actors/detail/broker.hpp"
#include "actors/detail/executors.hpp"
#include "actors/detail/request_state.hpp"
#include "actors/detail/runtime_impl.hpp"
#include "actors/detail/supervisor.hpp"
#include "runtime/detail/thrown_by.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/detail/lease_holder.hpp"
#include "runtime/store/memory_store.hpp"
#include "runtime/telemetry/fanout_sink.hpp"
#include "runtime/telemetry/otlp_exporter.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <unordered_set>

namespace troupe {

namespace {

reply failed(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

// host/pid/start/random: readable in an "owned by" error, never the same for
// two runtimes, and naming this process, so that after a crash the next
// process on this host takes its threads at once (lease_holder.hpp).
std::string made_up_owner_id() { return process_owner_id(getpid(), random_ids().next("rt")); }

}  // namespace

// --- request ---------------------------------------------------------------

std::optional<std::string> request::state::settle(reply r) {
  if (settled_.exchange(true)) {
    std::lock_guard lock(mutex_);
    if (!result_ || !result_->paused() || r.paused()) return std::nullopt;
  }
  std::optional<std::string> thrown;
  if (on_event) thrown = thrown_by([&] { on_event(stream_event{request_finished_event{r}}); });
  auto fail_with = [&](const std::string& what) {
    r = reply{id, error_info::of(error_type::callback_failed, "a callback of the request threw: " + what), r.usage,
              r.iterations};
  };
  if (thrown) fail_with(*thrown);
  if (on_reply) {
    if (auto again = thrown_by([&] { on_reply(r); })) {
      if (!thrown) fail_with(*again);
      thrown = std::move(again);
    }
  }
  const bool final = !r.paused();
  {
    std::lock_guard lock(mutex_);
    result_ = std::move(r);
  }
  finished_.notify_all();
  // Nothing calls them after a final reply, and what they capture (often
  // what holds this state) is let go with them; a paused request keeps them
  // for the end that takes the pause's place.
  if (final) {
    std::function<void(const stream_event&)> events = std::move(on_event);
    std::function<void(const reply&)> replies = std::move(on_reply);
    on_event = nullptr;
    on_reply = nullptr;
  }
  return thrown;
}

std::optional<std::string> request::state::notify(const stream_event& e) {
  return thrown_by([&] { on_event(e); });
}

bool request::state::finished() const {
  std::lock_guard lock(mutex_);
  return result_.has_value();
}

std::optional<reply> request::state::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  if (!finished_.wait_for(lock, timeout, [&] { return result_.has_value(); })) return std::nullopt;
  return result_;
}

const std::string& request::id() const { return state_->id; }

std::optional<reply> request::await(std::chrono::milliseconds timeout) const { return state_->wait(timeout); }

bool request::done() const { return state_->finished(); }

std::vector<open_approval> request::pending() const {
  auto r = state_->wait(std::chrono::milliseconds(0));
  return r ? r->pending : std::vector<open_approval>{};
}

void request::cancel(std::string reason) const {
  if (state_->cancel_elsewhere) {
    state_->cancel_elsewhere(std::move(reason));
    return;
  }
  auto rt = state_->rt.lock();
  if (!rt) return;
  auto impl = rt->impl.load();
  if (!impl || impl->stopped) return;
  caf::anon_send(impl->broker_for(state_->agent_id), cancel_atom::value, state_, std::move(reason));
}

// --- the runtime -------------------------------------------------------------

runtime::impl::impl(runtime_options o) : options(std::move(o)) {
  const std::size_t threads =
      options.scheduler_threads ? options.scheduler_threads : std::max(1u, std::thread::hardware_concurrency());
  config.set("scheduler.max-threads", threads);
  config.set("logger.console", caf::atom("none"));
  system = std::make_unique<caf::actor_system>(config);

  ctx = std::make_shared<runtime_context>();
  ctx->provider = options.provider;
  ctx->store = options.store ? options.store : std::make_shared<memory_store>();
  ctx->telemetry = options.telemetry ? options.telemetry : std::make_shared<log_sink>();
  // The OTEL_ variables add an OTLP exporter beside the sink chosen above.
  if (options.traces_from_environment)
    if (auto otlp = otlp_options_from_env())
      ctx->telemetry = combined(ctx->telemetry, std::make_shared<otlp_exporter>(std::move(*otlp)));
  ctx->record_spans = ctx->telemetry->records_spans();
  ctx->record_content = ctx->telemetry->records_content();
  ctx->stores = std::make_unique<store_executor>(
      ctx->store, store_executor_options{.threads = options.store_threads, .deadline = options.store_deadline});
  ctx->owner_id = options.owner_id.empty() ? made_up_owner_id() : options.owner_id;
  ctx->lease_ttl = options.lease_ttl;
  ctx->take_lease = options.take_lease;
  ctx->workers = std::make_unique<worker_pool>(options.tool_workers, options.max_queued_tool_jobs);
  ctx->max_restarts = options.max_restarts;
  ctx->restart_window = options.restart_window;
  ctx->seed = options.seed;

  // Pools replace a member that dies; the factories hold the context weakly
  // (members hold it strongly, and the pools live in it).
  auto& sys = *system;
  std::weak_ptr<runtime_context> weak = ctx;
  auto replaced = [weak](const char* what) {
    return [weak, what] {
      if (auto c = weak.lock())
        c->emit(telemetry_kind::actor_restarted,
                [&] { return telemetry_event{telemetry_kind::actor_restarted, {}, {}, {}, {}, {}, 0, 0, what}; });
    };
  };
  ctx->store->set_repair_report([weak](const std::string& thread_id, const std::string& what) {
    if (auto c = weak.lock())
      c->emit(telemetry_kind::thread_repaired,
              [&] { return telemetry_event{telemetry_kind::thread_repaired, {}, thread_id, {}, {}, {}, 0, 0, what}; });
  });
  const std::size_t executors = options.executors ? options.executors : threads;
  ctx->llm_executors.start(
      executors, [&sys, weak] { return spawn_llm_executor(sys, weak.lock()); }, replaced("model executor"));
  ctx->tool_executors.start(
      executors, [&sys, weak] { return spawn_tool_executor(sys, weak.lock()); }, replaced("tool executor"));
  brokers.start(
      threads, [&sys, weak] { return spawn_broker(sys, weak.lock()); }, replaced("broker"));
  supervisor = spawn_supervisor(sys, ctx);
}

runtime::impl::~impl() { shutdown(); }

void runtime::impl::shutdown() {
  {
    std::unique_lock lock(accepting);
    if (stopped.exchange(true)) return;
  }
  ctx->shutting_down = true;
  {
    // A scoped actor counts as running: it must be gone before the wait below.
    caf::scoped_actor self{*system};
    std::vector<agent_actor> agents;
    self->request(supervisor, std::chrono::seconds(30), shutdown_atom::value)
        .receive([&](std::vector<agent_actor>& all) { agents = std::move(all); }, [](caf::error&) {});
    // Agents first, so that their last replies reach the brokers: sent from
    // here, the stops spread over the scheduler's threads (supervisor.hpp).
    const auto patience = std::chrono::seconds(30) + std::chrono::microseconds(50) * agents.size();
    for (auto& a : agents) caf::anon_send(a, stop_atom::value);
    agents.clear();
    self->request(supervisor, patience, done_atom::value).receive([](bool) {}, [](caf::error&) {});
    // ...then the brokers fail whatever is still waiting.
    for (auto& b : brokers.close())
      self->request(b, std::chrono::seconds(30), shutdown_atom::value).receive([](bool) {}, [](caf::error&) {});
    self->send_exit(supervisor, caf::exit_reason::user_shutdown);
    for (auto& e : ctx->llm_executors.close()) self->send_exit(e, caf::exit_reason::user_shutdown);
    for (auto& e : ctx->tool_executors.close()) self->send_exit(e, caf::exit_reason::user_shutdown);
  }
  system->await_all_actors_done();
  ctx->stores.reset();
  ctx->workers.reset();
  std::vector<std::shared_ptr<mcp::server>> servers;
  {
    std::lock_guard lock(mcp_mutex);
    servers.swap(mcp_servers);
  }
  for (auto& s : servers) s->close();
  // Spans of the last requests are still queued in an exporter.
  ctx->telemetry->flush(options.telemetry_flush_timeout);
}

// By agent: every ask to one agent passes through the same broker, so asks
// made one after another reach the agent in that order.
broker_actor runtime::impl::broker_for(const std::string& agent_id) const {
  return brokers.pick(std::hash<std::string>{}(agent_id));
}

namespace {

// Hands a request to the agent's broker (`send(broker, agent, state)`)
// once the runtime and the agent are there to take it; otherwise settles it
// with why not.
template <class Send>
request to_broker(runtime::impl& rt, const std::string& agent_id, std::shared_ptr<request::state> s,
                  std::optional<std::chrono::milliseconds> deadline, Send send) {
  s->agent_id = agent_id;
  s->rt = rt.self_ref;
  request handle(s);
  std::shared_lock lock(rt.accepting);
  if (rt.stopped) {
    s->settle(failed(s->id, error_type::shutdown, "the runtime is shut down"));
    return handle;
  }
  auto agent = rt.ctx->agents.find_entry(agent_id);
  if (!agent) {
    auto why = rt.ctx->agents.failure(agent_id);
    s->settle(why ? failed(s->id, error_type::agent_failed, *why)
                  : failed(s->id, error_type::not_found, "there is no agent named " + agent_id));
    return handle;
  }
  s->deadline = deadline.value_or(agent->deadline);
  send(rt.broker_for(agent_id), agent->actor, std::move(s));
  return handle;
}

}  // namespace

request runtime::impl::ask(const std::string& agent_id, std::string question, ask_options options) {
  // One id source per calling thread: no shared counter on every ask.
  thread_local random_ids request_ids;
  auto s = std::make_shared<request::state>();
  // A made-up id is new: there is nothing of it to look for.
  const bool retry = options.retry && !options.request_id.empty();
  s->id = options.request_id.empty() ? request_ids.next("req") : std::move(options.request_id);
  s->on_event = std::move(options.on_event);
  s->on_reply = std::move(options.on_reply);
  s->thread_id = options.thread_id;
  query q{s->id,
          std::move(options.thread_id),
          std::move(question),
          std::move(options.overrides),
          std::move(options.traceparent),
          std::move(options.observation),
          retry};
  return to_broker(*this, agent_id, std::move(s), options.deadline,
                   [&](const broker_actor& broker, const agent_actor& agent, std::shared_ptr<request::state> st) {
                     caf::anon_send(broker, ask_atom::value, std::move(q), agent, std::move(st));
                   });
}

request runtime::impl::decide(const std::string& agent_id, decision d, ask_options options) {
  auto s = std::make_shared<request::state>();
  s->id = d.request_id;
  s->on_event = std::move(options.on_event);
  s->on_reply = std::move(options.on_reply);
  s->thread_id = options.thread_id;
  return to_broker(*this, agent_id, std::move(s), options.deadline,
                   [&](const broker_actor& broker, const agent_actor& agent, std::shared_ptr<request::state> st) {
                     caf::anon_send(broker, decide_atom::value, std::move(options.thread_id), std::move(d), agent,
                                    std::move(st));
                   });
}

runtime::runtime(runtime_options options) {
  impl_ = std::make_shared<impl>(std::move(options));
  impl_ref_ = std::make_shared<agent::impl_ref>();
  impl_ref_->impl.store(impl_);
  impl_->self_ref = impl_ref_;
}

runtime::~runtime() {
  impl_->shutdown();
  impl_ref_->impl.store(nullptr);
  // Handles still inside a call hold a reference of their own. Wait for them
  // and destroy the actor system here: CAF 0.17's actor system, destroyed on
  // a thread that never used it, waits forever for its logger, which every
  // thread that used the system still references.
  while (impl_.use_count() > 1) std::this_thread::yield();
  impl_.reset();
}

tool_registry& runtime::tools() { return impl_->ctx->tools; }

agent runtime::spawn_agent(agent_spec spec) {
  std::vector<agent_spec> one;
  one.push_back(std::move(spec));
  return std::move(spawn_agents(std::move(one)).front());
}

std::vector<agent> runtime::spawn_agents(std::vector<agent_spec> specs) {
  auto launches = std::make_shared<std::vector<agent_launch>>();
  launches->reserve(specs.size());
  std::unordered_set<std::string_view> ids;
  ids.reserve(specs.size());
  const agent_spec* previous = nullptr;
  for (agent_spec& spec : specs) {
    if (spec.id.empty()) spec.id = random_ids().next("agent");
    if (!ids.insert(spec.id).second) throw std::invalid_argument("agent " + spec.id + " is given twice");
    if (!spec.provider && !impl_->ctx->provider)
      throw std::invalid_argument("agent " + spec.id + " has no model provider, and the runtime has none");
    for (const auto& [tool, rule] : spec.approvals)
      if (std::find(spec.tools.begin(), spec.tools.end(), tool) == spec.tools.end())
        throw std::invalid_argument("agent " + spec.id + " has an approval rule for " + tool +
                                    ", which is not one of its tools");
    // Agents spawned together mostly differ in id and prompt: what they have
    // in common is held once.
    const agent_launch* last = previous ? &launches->back() : nullptr;
    auto config = make_react_config(
        spec, last && spec.tools == previous->tools ? last->config->tools : impl_->ctx->tools.specs(spec.tools));
    if (last && *config == *last->config) config = last->config;
    auto profile = std::make_shared<const agent_profile>(spec);
    if (last && *profile == *last->profile) profile = last->profile;
    std::shared_ptr<const std::string> prompt;
    if (last && last->system_prompt && *last->system_prompt == spec.system_prompt)
      prompt = last->system_prompt;  // one prompt for a batch of the same persona
    else if (!spec.system_prompt.empty())
      prompt = std::make_shared<const std::string>(spec.system_prompt);
    launches->push_back(agent_launch{spec.id, std::move(profile), std::move(config), std::move(prompt)});
    previous = &spec;
  }
  caf::scoped_actor self{*impl_->system};
  std::string error;
  self->request(impl_->supervisor, caf::infinite, spawn_atom::value,
                std::shared_ptr<const std::vector<agent_launch>>(launches))
      .receive([](std::size_t) {}, [&](caf::error& e) { error = impl_->system->render(e); });
  if (!error.empty())
    throw std::invalid_argument(
        (specs.size() == 1 ? "cannot start agent " + specs.front().id : std::string("cannot start the agents")) + ": " +
        error);
  std::vector<agent> out;
  out.reserve(specs.size());
  for (agent_spec& spec : specs) out.emplace_back(impl_ref_, std::move(spec.id));
  return out;
}

std::optional<agent> runtime::find_agent(const std::string& id) const {
  if (!impl_->ctx->agents.find(id)) return std::nullopt;
  return agent(impl_ref_, id);
}

std::vector<std::string> runtime::agent_ids() const { return impl_->ctx->agents.ids(); }

void runtime::shutdown() { impl_->shutdown(); }

void runtime::add_agent_tool(std::string tool_name, std::string agent_id, std::string description,
                             std::chrono::milliseconds timeout) {
  std::weak_ptr<agent::impl_ref> weak = impl_ref_;
  tools().add(detail::agent_tool(std::move(tool_name), agent_id, std::move(description), timeout,
                                 [weak, agent_id](std::string question, ask_options o) {
                                   auto rt = weak.lock();
                                   auto impl = rt ? rt->impl.load() : nullptr;
                                   if (!impl) throw tool_failure(error_type::shutdown, "the runtime is shutting down");
                                   return impl->ask(agent_id, std::move(question), std::move(o));
                                 }));
}

mcp_server_status runtime::add_mcp_server(mcp_server_config config) {
  if (impl_->stopped) return {{}, {}, error_info::of(error_type::shutdown, "the runtime is shut down")};
  auto server = mcp::server::create(std::move(config), impl_->ctx->tools);
  mcp_server_status status = server->start();
  if (!status.ok()) {
    server->close();
    return status;
  }
  std::lock_guard lock(impl_->mcp_mutex);
  if (impl_->stopped) {  // shut down while it started
    server->close();
    return {{}, {}, error_info::of(error_type::shutdown, "the runtime is shut down")};
  }
  impl_->mcp_servers.push_back(std::move(server));
  return status;
}

// --- agent ---------------------------------------------------------------------

namespace {

// A request handle of a runtime that is gone.
request without_runtime(std::string request_id, const std::string& agent_id) {
  auto s = std::make_shared<request::state>();
  s->id = std::move(request_id);
  s->agent_id = agent_id;
  s->settle(failed(s->id, error_type::shutdown, "the runtime no longer exists"));
  return request(s);
}

}  // namespace

request agent::ask(std::string question, ask_options options) const {
  auto impl = rt_->impl.load();
  if (!impl) return without_runtime(options.request_id, id_);
  return impl->ask(id_, std::move(question), std::move(options));
}

request agent::decide(decision d, ask_options options) const {
  auto impl = rt_->impl.load();
  if (!impl) return without_runtime(d.request_id, id_);
  return impl->decide(id_, std::move(d), std::move(options));
}

std::optional<thread_view> agent::snapshot(const std::string& thread_id, std::chrono::milliseconds timeout) const {
  auto impl = rt_->impl.load();
  if (!impl || impl->stopped) return std::nullopt;
  auto a = impl->ctx->agents.find(id_);
  if (!a) return std::nullopt;
  caf::scoped_actor self{*impl->system};
  std::optional<thread_view> out;
  self->request(*a, timeout, snapshot_atom::value, thread_id)
      .receive([&](const thread_view& t) { out = t; }, [](caf::error&) {});
  return out;
}

bool agent::stop() const {
  auto impl = rt_->impl.load();
  if (!impl || impl->stopped) return false;
  caf::scoped_actor self{*impl->system};
  bool stopped = false;
  self->request(impl->supervisor, std::chrono::seconds(10), stop_atom::value, id_)
      .receive([&](bool b) { stopped = b; }, [](caf::error&) {});
  return stopped;
}

void agent::drain(std::chrono::milliseconds patience, std::function<void(bool stopped)> stopped) const {
  auto impl = rt_->impl.load();
  if (!impl) return stopped(false);
  // Held as asks hold it: a shutdown that begins later still finds the
  // helper below waiting on the supervisor, and answers it.
  std::shared_lock lock(impl->accepting);
  if (impl->stopped) return stopped(false);
  // A helper actor waits for the supervisor's answer, so that no caller's
  // thread does.
  impl->system->spawn(
      [supervisor = impl->supervisor, id = id_, patience, stopped = std::move(stopped)](caf::event_based_actor* self) {
        self->request(supervisor, caf::infinite, drain_atom::value, id, caf::timespan(patience))
            .then([stopped](bool b) { stopped(b); }, [stopped](caf::error&) { stopped(false); });
      });
}

bool agent::running() const {
  auto impl = rt_->impl.load();
  return impl && !impl->stopped && impl->ctx->agents.find(id_).has_value();
}

}  // namespace troupe
