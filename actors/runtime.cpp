#include "actors/runtime.hpp"

#include "actors/agent_actor.hpp"
#include "actors/runtime_impl.hpp"
#include "actors/supervisor.hpp"
#include "runtime/store/memory_store.hpp"
#include "runtime/random_ids.hpp"

#include <condition_variable>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace troupe {

// --- request ---------------------------------------------------------------

struct request::state {
  std::string id;
  std::string agent_id;
  std::function<void(const stream_event&)> on_event;
  std::function<void(const reply&)> on_reply;
  std::weak_ptr<agent::impl_ref> rt;

  mutable std::mutex mutex;
  mutable std::condition_variable finished;
  std::optional<reply> result;

  // Called once, by the broker that owns the request.
  void deliver(reply r) {
    if (on_event) on_event(stream_event{request_finished_event{r}});
    if (on_reply) on_reply(r);
    {
      std::lock_guard lock(mutex);
      result = std::move(r);
    }
    finished.notify_all();
  }
};

const std::string& request::id() const { return state_->id; }

std::optional<reply> request::await(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  if (!state_->finished.wait_for(lock, timeout, [&] { return state_->result.has_value(); }))
    return std::nullopt;
  return state_->result;
}

bool request::done() const {
  std::lock_guard lock(state_->mutex);
  return state_->result.has_value();
}

// --- the broker: replies and stream events for requests made through the facade.

namespace {

struct pending_request {
  std::shared_ptr<request::state> state;
  caf::actor agent;
};

struct broker_state {
  static inline const char* name = "troupe.broker";
  std::unordered_map<std::string, pending_request> pending;
  std::unordered_map<caf::actor_addr, std::unordered_set<std::string>> by_agent;
};

using broker_self = caf::stateful_actor<broker_state>;

reply failed(const std::string& request_id, std::string type, std::string message) {
  return reply{request_id, error_info::of(std::move(type), std::move(message)), {}, 0};
}

using agent_down_atom = caf::atom_constant<caf::atom("agentdown")>;

caf::behavior broker(broker_self* self, std::shared_ptr<runtime_context> ctx) {
  // Down messages overtake ordinary ones, so an agent's last replies may still
  // be queued behind this notice: look again once they have been handled.
  self->set_down_handler([self](caf::down_msg& m) {
    const bool crashed = m.reason && m.reason != caf::exit_reason::normal;
    self->send(self, agent_down_atom::value, m.source, crashed, self->system().render(m.reason));
  });
  return {
      [self, ctx](agent_down_atom, const caf::actor_addr& agent, bool crashed, const std::string& why) {
        auto& st = self->state;
        auto it = st.by_agent.find(agent);
        if (it == st.by_agent.end()) return;
        // Asks still on their way when the agent stopped end here too.
        const char* type = crashed ? "agent_crashed" : ctx->shutting_down ? "shutdown" : "agent_stopped";
        for (const auto& id : it->second) {
          auto p = st.pending.find(id);
          if (p == st.pending.end()) continue;
          const auto& s = p->second.state;
          s->deliver(failed(id, type, "agent " + s->agent_id + " stopped before answering (" + why + ")"));
          st.pending.erase(p);
        }
        st.by_agent.erase(it);
      },
      [self](ask_atom, query q, const caf::actor& agent, std::shared_ptr<request::state> s) {
        auto& st = self->state;
        auto& asked = st.by_agent[agent.address()];
        if (asked.empty()) self->monitor(agent);
        asked.insert(q.request_id);
        const bool stream = static_cast<bool>(s->on_event);
        st.pending[q.request_id] = pending_request{std::move(s), agent};
        self->send(agent, ask_atom::value, std::move(q), caf::actor_cast<caf::actor>(self), stream);
      },
      [self](reply_atom, reply r) {
        auto& st = self->state;
        auto it = st.pending.find(r.request_id);
        if (it == st.pending.end()) return;
        pending_request p = std::move(it->second);
        st.pending.erase(it);
        if (auto a = st.by_agent.find(p.agent.address()); a != st.by_agent.end()) a->second.erase(r.request_id);
        p.state->deliver(std::move(r));
      },
      // Cancels travel the asks' path, so a cancel never overtakes its ask.
      [self](cancel_atom, const std::string& request_id, const std::string& reason) {
        auto it = self->state.pending.find(request_id);
        if (it != self->state.pending.end())
          self->send(it->second.agent, cancel_atom::value, request_id, reason);
      },
      [self](event_atom, const stream_event& e) {
        const std::string& id = std::visit(
            [](const auto& x) -> const std::string& {
              if constexpr (requires { x.request_id; }) return x.request_id;
              else return x.result.request_id;
            },
            e);
        auto it = self->state.pending.find(id);
        if (it != self->state.pending.end() && it->second.state->on_event) it->second.state->on_event(e);
      },
      [self](shutdown_atom) -> bool {
        for (auto& [id, p] : self->state.pending)
          p.state->deliver(failed(id, "shutdown", "the runtime shut down before the request finished"));
        self->state.pending.clear();
        self->quit();
        return true;
      },
  };
}

}  // namespace

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
  ctx->workers = std::make_unique<worker_pool>(options.tool_workers, options.max_queued_tool_jobs);
  ctx->max_restarts = options.max_restarts;
  ctx->restart_window = options.restart_window;

  const std::size_t executors = options.executors ? options.executors : threads;
  supervisor = spawn_supervisor(*system, ctx, executors);
  for (std::size_t i = 0; i < threads; ++i) brokers.push_back(system->spawn(broker, ctx));
}

runtime::impl::~impl() { shutdown(); }

void runtime::impl::shutdown() {
  if (stopped.exchange(true)) return;
  ctx->shutting_down = true;
  {
    // A scoped actor counts as running: it must be gone before the wait below.
    caf::scoped_actor self{*system};
    // Agents first, so that their last replies reach the brokers...
    self->request(supervisor, std::chrono::seconds(30), shutdown_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
    // ...then the brokers fail whatever is still waiting.
    for (auto& b : brokers)
      self->request(b, std::chrono::seconds(30), shutdown_atom::value).receive([](bool) {}, [](caf::error&) {});
    self->send_exit(supervisor, caf::exit_reason::user_shutdown);
    for (auto& e : ctx->llm_executors.all()) self->send_exit(e, caf::exit_reason::user_shutdown);
    for (auto& e : ctx->tool_executors.all()) self->send_exit(e, caf::exit_reason::user_shutdown);
  }
  system->await_all_actors_done();
  ctx->workers.reset();
}

// By agent: every ask to one agent passes through the same broker, so asks
// made one after another reach the agent in that order.
const caf::actor& runtime::impl::broker_for(const std::string& agent_id) const {
  return brokers[std::hash<std::string>{}(agent_id) % brokers.size()];
}

request runtime::impl::ask(const std::string& agent_id, std::string question, ask_options options) {
  // One id source per calling thread: no shared counter on every ask.
  thread_local random_ids request_ids;
  auto s = std::make_shared<request::state>();
  s->id = options.request_id.empty() ? request_ids.next("req") : std::move(options.request_id);
  s->agent_id = agent_id;
  s->on_event = std::move(options.on_event);
  s->on_reply = std::move(options.on_reply);
  s->rt = self_ref;
  request handle(s);

  if (stopped) {
    s->deliver(failed(s->id, "shutdown", "the runtime is shut down"));
    return handle;
  }
  auto agent = ctx->agents.find(agent_id);
  if (!agent) {
    auto why = ctx->agents.failure(agent_id);
    s->deliver(failed(s->id, why ? "agent_failed" : "not_found",
                      why ? *why : "there is no agent named " + agent_id));
    return handle;
  }
  query q{s->id, std::move(options.thread_id), std::move(question), std::move(options.overrides)};
  caf::anon_send(broker_for(agent_id), ask_atom::value, std::move(q), *agent, std::move(s));
  return handle;
}

void request::cancel(std::string reason) const {
  auto rt = state_->rt.lock();
  if (!rt || !rt->impl || rt->impl->stopped) return;
  caf::anon_send(rt->impl->broker_for(state_->agent_id), cancel_atom::value, state_->id, std::move(reason));
}

runtime::runtime(runtime_options options) {
  auto owned = std::make_unique<impl>(std::move(options));
  impl_ = owned.get();
  impl_ref_ = std::make_shared<agent::impl_ref>();
  impl_ref_->impl = std::move(owned);
  impl_->self_ref = impl_ref_;
}

runtime::~runtime() {
  impl_->shutdown();
  impl_ref_->impl.reset();
}

tool_registry& runtime::tools() { return impl_->ctx->tools; }

agent runtime::spawn_agent(agent_spec spec) {
  if (spec.id.empty()) spec.id = random_ids().next("agent");
  if (!spec.provider && !impl_->ctx->provider)
    throw std::invalid_argument("agent " + spec.id + " has no model provider, and the runtime has none");
  auto config = make_react_config(spec, impl_->ctx->tools);
  auto shared_spec = std::make_shared<const agent_spec>(std::move(spec));
  caf::scoped_actor self{*impl_->system};
  std::string error;
  self->request(impl_->supervisor, std::chrono::seconds(10), spawn_atom::value, shared_spec, config)
      .receive([](const caf::actor&) {},
               [&](caf::error& e) { error = impl_->system->render(e); });
  if (!error.empty()) throw std::invalid_argument("cannot start agent " + shared_spec->id + ": " + error);
  return agent(impl_ref_, shared_spec->id);
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
  tool t;
  t.spec = tool_spec{std::move(tool_name), std::move(description),
                     boost::json::object{
                         {"type", "object"},
                         {"properties", {{"question", {{"type", "string"}, {"description", "What to ask."}}}}},
                         {"required", boost::json::array{"question"}}}};
  t.timeout = timeout;
  t.blocking = true;  // it waits for the other agent
  t.retry.max_attempts = 1;
  t.run = [weak, agent_id, timeout](const boost::json::object& args, const tool_context& ctx) -> boost::json::value {
    auto rt = weak.lock();
    if (!rt || !rt->impl) throw tool_failure("shutdown", "the runtime is shutting down");
    ask_options o;
    o.thread_id = ctx.agent_id + "->" + agent_id;  // one conversation per calling agent
    request r = rt->impl->ask(agent_id, std::string(args.at("question").as_string()), std::move(o));
    auto answer = r.await(timeout);
    if (!answer) {
      r.cancel("the calling tool timed out");
      throw tool_failure(error_type::timeout, "agent " + agent_id + " did not answer in time");
    }
    if (!answer->ok()) {
      const auto& e = std::get<error_info>(answer->outcome);
      throw tool_failure(e.type, "agent " + agent_id + " failed: " + e.message);
    }
    return boost::json::value(std::get<std::string>(answer->outcome));
  };
  tools().add(std::move(t));
}

// --- agent ---------------------------------------------------------------------

request agent::ask(std::string question, ask_options options) const {
  if (!rt_->impl) {
    auto s = std::make_shared<request::state>();
    s->id = options.request_id;
    s->agent_id = id_;
    s->deliver(failed(s->id, "shutdown", "the runtime no longer exists"));
    return request(s);
  }
  return rt_->impl->ask(id_, std::move(question), std::move(options));
}

std::optional<thread_view> agent::snapshot(const std::string& thread_id,
                                           std::chrono::milliseconds timeout) const {
  if (!rt_->impl || rt_->impl->stopped) return std::nullopt;
  auto a = rt_->impl->ctx->agents.find(id_);
  if (!a) return std::nullopt;
  caf::scoped_actor self{*rt_->impl->system};
  std::optional<thread_view> out;
  self->request(*a, timeout, snapshot_atom::value, thread_id)
      .receive([&](const thread_view& t) { out = t; }, [](caf::error&) {});
  return out;
}

bool agent::stop() const {
  if (!rt_->impl || rt_->impl->stopped) return false;
  caf::scoped_actor self{*rt_->impl->system};
  bool stopped = false;
  self->request(rt_->impl->supervisor, std::chrono::seconds(10), stop_atom::value, id_)
      .receive([&](bool b) { stopped = b; }, [](caf::error&) {});
  return stopped;
}

bool agent::running() const {
  return rt_->impl && !rt_->impl->stopped && rt_->impl->ctx->agents.find(id_).has_value();
}

}  // namespace troupe
