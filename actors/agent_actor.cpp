#include "actors/agent_actor.hpp"

#include "runtime/clock.hpp"
#include "runtime/random_ids.hpp"
#include "signals/overloaded.hpp"
#include "strategy/react_thread.hpp"
#include "strategy/recovery.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace troupe {

namespace {

struct requester {
  caf::actor reply_to;
  bool stream = false;
  std::string thread_id;
  std::int64_t started_us = 0;
};

struct queued_ask {
  query q;
  requester from;
};

// One thread of the agent: its history and machine state, the asks waiting
// for it, and the tool calls of the current turn not yet handed out.
struct thread_slot {
  explicit thread_slot(react_thread rt) : conversation(std::move(rt)) {}

  react_thread conversation;
  std::string active_request;  // empty: idle
  std::vector<queued_ask> queue;
  std::vector<tool_exec> waiting_tools;   // beyond the parallel limit
  std::vector<std::string> running_tools; // tool_call_ids handed to the executor
  std::int64_t llm_started_us = 0;
};

struct agent_state {
  static inline const char* name = "troupe.agent";

  std::shared_ptr<const agent_spec> spec;
  std::shared_ptr<const react_config> config;
  std::shared_ptr<runtime_context> ctx;
  std::shared_ptr<llm_provider> provider;
  random_ids ids;
  std::size_t executor_key = 0;
  caf::actor llm_executor;
  caf::actor tool_executor;
  bool stopping = false;
  // Node-based maps: references to slots stay valid while others are added.
  std::unordered_map<std::string, thread_slot> threads;
  std::unordered_map<std::string, requester> requests;
};

using agent_self = caf::stateful_actor<agent_state>;

// The behaviour's logic, as functions of the actor.
class agent_logic {
 public:
  explicit agent_logic(agent_self* self) : self_(self), st_(self->state) {}

  std::string default_thread_id() const { return st_.spec->id + ":default"; }

  thread_slot& slot_for(const std::string& thread_id) {
    auto it = st_.threads.find(thread_id);
    if (it != st_.threads.end()) return it->second;
    return st_.threads.emplace(thread_id, thread_slot(load_thread(thread_id))).first->second;
  }

  void on_ask(query q, caf::actor reply_to, bool stream) {
    if (q.thread_id.empty()) q.thread_id = default_thread_id();
    if (st_.stopping) {
      send_reply(reply_to, refused(q.request_id, "shutdown", "the agent is stopping"));
      return;
    }
    if (q.request_id.empty() || st_.requests.count(q.request_id)) {
      send_reply(reply_to, refused(q.request_id, error_type::invalid_query,
                                   q.request_id.empty() ? "a query needs a request_id"
                                                        : "request " + q.request_id + " is already running"));
      return;
    }
    thread_slot& slot = slot_for(q.thread_id);
    requester from{std::move(reply_to), stream, q.thread_id, steady_us()};
    if (slot.active_request.empty()) {
      start(slot, std::move(q), std::move(from));
    } else if (slot.queue.size() < st_.spec->max_queued_asks) {
      st_.requests[q.request_id] = from;
      slot.queue.push_back({std::move(q), std::move(from)});
    } else {
      send_reply(from.reply_to,
                 refused(q.request_id, "queue_full",
                         "thread " + q.thread_id + " already has " +
                             std::to_string(st_.spec->max_queued_asks) + " asks waiting"));
    }
  }

  void on_signal(const std::string& thread_id, const signal& s) {
    auto it = st_.threads.find(thread_id);
    if (it == st_.threads.end()) return;
    thread_slot& slot = it->second;
    observe(slot, s);
    run(slot, s);
    pump_tools(slot);
  }

  void on_cancel(const std::string& request_id, const std::string& reason) {
    auto it = st_.requests.find(request_id);
    if (it == st_.requests.end()) return;
    thread_slot& slot = st_.threads.at(it->second.thread_id);
    if (slot.active_request == request_id) {
      run(slot, cancel{request_id, reason});
      return;
    }
    auto queued = std::find_if(slot.queue.begin(), slot.queue.end(),
                               [&](const queued_ask& a) { return a.q.request_id == request_id; });
    if (queued == slot.queue.end()) return;
    requester from = std::move(queued->from);
    slot.queue.erase(queued);
    st_.requests.erase(request_id);
    send_reply(from.reply_to, refused(request_id, error_type::cancelled, reason));
  }

  thread_view snapshot(const std::string& thread_id) {
    return slot_for(thread_id.empty() ? default_thread_id() : thread_id).conversation.history();
  }

  // Ends every request with a shutdown error: running ones through the
  // machine (so their tool calls get results), queued ones directly.
  void stop() {
    st_.stopping = true;
    for (auto& [id, slot] : st_.threads) {
      for (auto& waiting : slot.queue) {
        st_.requests.erase(waiting.q.request_id);
        send_reply(waiting.from.reply_to,
                   refused(waiting.q.request_id, "shutdown", "the agent is stopping"));
      }
      slot.queue.clear();
      if (!slot.active_request.empty()) run(slot, cancel{slot.active_request, "the agent is stopping"});
    }
  }

  // An executor died: what it was running will never answer.
  void on_executor_down(const caf::actor_addr& who) {
    const bool llm = who == st_.llm_executor.address();
    const bool tools = who == st_.tool_executor.address();
    if (!llm && !tools) return;
    // Forget it first: a request that starts below must go to its successor.
    if (llm) st_.llm_executor = {};
    if (tools) st_.tool_executor = {};
    const error_info crashed{"executor_crashed",
                             std::string(llm ? "the model" : "the tool") +
                                 " executor stopped before the call finished",
                             {}, 0, {}};
    for (auto& [id, slot] : st_.threads) {
      if (llm && !slot.conversation.state().summary_call_id.empty())
        on_signal(id, llm_result{slot.conversation.state().summary_call_id, crashed});
      const react_state& s = slot.conversation.state();
      if (llm && s.status == react_status::awaiting_llm) {
        run(slot, llm_result{s.call_id, crashed});
      } else if (tools && s.status == react_status::awaiting_tools) {
        const auto running = slot.running_tools;
        for (const auto& tool_call_id : running) {
          const auto& pending = slot.conversation.state().tool_calls;
          auto p = std::find_if(pending.begin(), pending.end(),
                                [&](const pending_tool_call& x) { return x.call.id == tool_call_id; });
          if (p == pending.end()) continue;
          const std::string name = p->call.name;
          on_signal(id, tool_result{slot.conversation.state().call_id, tool_call_id, name, crashed});
        }
      }
    }
  }

 private:
  react_thread load_thread(const std::string& thread_id) {
    auto stored = st_.ctx->store->load(thread_id);
    if (!stored) return react_thread(thread(thread_id, wall_clock_ms()));
    return recovered(std::move(*stored));
  }

  // A stored thread made ready to continue. The agent that wrote it may have
  // died with tool calls in flight. The repair is kept only if it could be
  // stored; unrepaired, the calls are simply left out of every context (a
  // unit is sent whole or not at all).
  react_thread recovered(thread t) {
    auto repairs = interrupted_tool_results(t);
    if (!repairs.empty()) {
      thread repaired = t;
      repaired.append(std::move(repairs), wall_clock_ms(), st_.ids);
      if (st_.ctx->store->append(repaired, t.rev())) t = std::move(repaired);
    }
    return react_thread(std::move(t));
  }

  void start(thread_slot& slot, query q, requester from) {
    slot.active_request = q.request_id;
    st_.requests[q.request_id] = from;
    st_.ctx->emit(telemetry_kind::request_started, [&] {
      return telemetry_event{telemetry_kind::request_started, st_.spec->id, q.thread_id, q.request_id,
                   {}, {}, 0, 0, {}};
    });
    run(slot, signal{std::move(q)});
  }

  // One step of the machine, committed (to the store, then the thread) before
  // any of its directives leaves. A store that cannot be written fails the
  // running request with a typed error; the thread in memory stays what the
  // store holds.
  void run(thread_slot& slot, const signal& s) {
    std::optional<store_error> failure;
    auto persist = [&](const thread_view& t, std::uint64_t rev_before) {
      auto written = st_.ctx->store->append(t, rev_before);
      if (!written) failure = written.error();
      return written.has_value();
    };
    std::optional<applied> out = slot.conversation.apply(*st_.config, s, wall_clock_ms(), st_.ids, persist);
    if (!out) {
      fail_on_store(slot, *failure);
      return;
    }
    for (directive& d : out->directives) dispatch(slot, std::move(d));
  }

  void fail_on_store(thread_slot& slot, const store_error& e) {
    const react_state& state = slot.conversation.state();
    error_info why{"store_failed", "the thread could not be stored (" + e.type + "): " + e.message, {}, 0, {}};
    // Whatever the request had in flight is stopped; its results would have nowhere to go.
    if (state.status == react_status::awaiting_llm) self_->send(llm_executor(), cancel_atom::value, state.call_id, std::string{});
    for (const auto& tool_call_id : slot.running_tools)
      self_->send(tool_executor(), cancel_atom::value, state.call_id, tool_call_id);
    const std::string request_id = slot.active_request;
    const int iterations = state.iteration;
    const token_usage used = state.request_usage;
    slot.conversation.abandon_request(why);
    // The store may hold more than memory does: a commit whose answer was
    // lost with the connection, or another writer's. Take what it holds, so
    // that the next request does not meet the same conflict.
    const std::string& thread_id = slot.conversation.history().id();
    if (auto held = st_.ctx->store->load(thread_id); held && held->rev() != slot.conversation.history().rev())
      slot.conversation = recovered(std::move(*held));
    if (!request_id.empty()) finish(slot, reply{request_id, why, used, iterations});
  }

  void dispatch(thread_slot& slot, directive d) {
    const std::string& thread_id = slot.conversation.history().id();
    std::visit(
        overloaded{
            [&](llm_stream& x) {
              slot.llm_started_us = steady_us();
              // Near the budget: a sign the policy or the conversation needs attention.
              if (x.context.budget > 0 && x.context.estimated_tokens * 10 >= x.context.budget * 9)
                st_.ctx->emit(telemetry_kind::context_warning, [&] {
                  return telemetry_event{telemetry_kind::context_warning, st_.spec->id, thread_id, x.request_id,
                                         x.call_id, {}, x.iteration, 0,
                                         std::to_string(x.context.estimated_tokens) + " of " +
                                             std::to_string(x.context.budget) + " tokens"};
                });
              st_.ctx->emit(telemetry_kind::llm_started, [&] {
      return telemetry_event{telemetry_kind::llm_started, st_.spec->id, thread_id, x.request_id,
                             x.call_id, {}, x.iteration, 0, x.model};
    });
              self_->send(llm_executor(), exec_atom::value, std::move(x),
                          caf::actor_cast<caf::actor>(self_), thread_id, st_.provider);
            },
            [&](tool_exec& x) {
              slot.waiting_tools.push_back(std::move(x));
              pump_tools(slot);
            },
            [&](reply& x) { finish(slot, std::move(x)); },
            [&](request_error& x) {
              // Only an invalid query gets here: busy threads queue instead.
              auto it = st_.requests.find(x.request_id);
              if (it != st_.requests.end()) {
                send_reply(it->second.reply_to, refused(x.request_id, x.reason, x.message));
                st_.requests.erase(it);
              }
              slot.active_request.clear();
              start_next(slot);
            },
            [&](summarize& x) {
              // A model call of its own, beside the request; its result comes
              // back like any other and the machine commits it.
              llm_stream call{x.call_id, x.model, std::move(x.messages), nullptr, x.params, x.request_id, 0, {}};
              self_->send(llm_executor(), exec_atom::value, std::move(call), caf::actor_cast<caf::actor>(self_),
                          thread_id, st_.provider);
            },
            [&](cancel_call& x) {
              if (x.tool_call_id.empty()) {
                self_->send(llm_executor(), cancel_atom::value, x.call_id, std::string{});
              } else {
                std::erase(slot.running_tools, x.tool_call_id);
                self_->send(tool_executor(), cancel_atom::value, x.call_id, x.tool_call_id);
              }
            }},
        d);
  }

  // Hands waiting tool calls to the executor, at most max_parallel_tools at once.
  void pump_tools(thread_slot& slot) {
    while (!slot.waiting_tools.empty() && slot.running_tools.size() < st_.spec->max_parallel_tools) {
      tool_exec x = std::move(slot.waiting_tools.front());
      slot.waiting_tools.erase(slot.waiting_tools.begin());
      slot.running_tools.push_back(x.tool_call_id);
      const std::string& thread_id = slot.conversation.history().id();
      st_.ctx->emit(telemetry_kind::tool_started, [&] {
      return telemetry_event{telemetry_kind::tool_started, st_.spec->id, thread_id, x.request_id, x.call_id,
                     x.tool_call_id, x.iteration, 0, x.tool_name};
    });
      if (auto r = st_.requests.find(x.request_id); r != st_.requests.end() && r->second.stream)
        self_->send(r->second.reply_to, event_atom::value,
                    stream_event{tool_started_event{x.request_id, x.tool_call_id, x.tool_name, x.arguments}});
      self_->send(tool_executor(), exec_atom::value, std::move(x), caf::actor_cast<caf::actor>(self_),
                  thread_id, st_.spec->id);
    }
  }

  // Telemetry and stream events for a signal about to be applied.
  void observe(thread_slot& slot, const signal& s) {
    const react_state& state = slot.conversation.state();
    const std::string& thread_id = slot.conversation.history().id();
    std::visit(
        overloaded{
            [&](const llm_delta& d) {
              if (state.status != react_status::awaiting_llm || d.call_id != state.call_id) return;
              st_.ctx->emit(telemetry_kind::llm_delta, [&] {
      return telemetry_event{telemetry_kind::llm_delta, st_.spec->id, thread_id, state.request_id,
                             d.call_id, {}, state.iteration, 0, {}};
    });
              if (auto r = st_.requests.find(state.request_id); r != st_.requests.end() && r->second.stream)
                self_->send(r->second.reply_to, event_atom::value,
                            stream_event{delta_event{state.request_id, d.text, d.thinking}});
            },
            [&](const llm_result& r) {
              if (!state.summary_call_id.empty() && r.call_id == state.summary_call_id) {
                const telemetry_kind kind = r.ok() ? telemetry_kind::summary_completed : telemetry_kind::summary_failed;
                st_.ctx->emit(kind, [&] {
                  return telemetry_event{kind, st_.spec->id, thread_id, state.request_id, r.call_id, {}, 0, 0,
                                         r.ok() ? std::string{} : std::get<error_info>(r.outcome).message};
                });
                return;
              }
              if (state.status != react_status::awaiting_llm || r.call_id != state.call_id) return;
              st_.ctx->emit(r.ok() ? telemetry_kind::llm_completed : telemetry_kind::llm_error, [&] {
      return telemetry_event{r.ok() ? telemetry_kind::llm_completed : telemetry_kind::llm_error,
                             st_.spec->id, thread_id, state.request_id, r.call_id, {}, state.iteration,
                             steady_us() - slot.llm_started_us,
                             r.ok() ? std::string{} : std::get<error_info>(r.outcome).type};
    });
            },
            [&](const tool_result& r) {
              if (state.status != react_status::awaiting_tools || r.call_id != state.call_id) return;
              auto running = std::find(slot.running_tools.begin(), slot.running_tools.end(), r.tool_call_id);
              if (running == slot.running_tools.end()) return;
              slot.running_tools.erase(running);
              st_.ctx->emit(r.ok() ? telemetry_kind::tool_completed : telemetry_kind::tool_error, [&] {
      return telemetry_event{r.ok() ? telemetry_kind::tool_completed : telemetry_kind::tool_error,
                             st_.spec->id, thread_id, state.request_id, r.call_id, r.tool_call_id,
                             state.iteration, 0, r.tool_name};
    });
              if (auto q = st_.requests.find(state.request_id); q != st_.requests.end() && q->second.stream)
                self_->send(q->second.reply_to, event_atom::value,
                            stream_event{tool_finished_event{state.request_id, r.tool_call_id, r.tool_name, r.outcome}});
            },
            [](const auto&) {}},
        s);
  }

  void finish(thread_slot& slot, reply r) {
    auto it = st_.requests.find(r.request_id);
    if (it != st_.requests.end()) {
      if (st_.stopping && !r.ok() && std::get<error_info>(r.outcome).type == error_type::cancelled)
        r.outcome = error_info::of(error_type::shutdown, "the agent stopped before the request finished");
      const telemetry_kind kind =
          r.ok() ? telemetry_kind::request_completed
                 : std::get<error_info>(r.outcome).type == error_type::cancelled
                       ? telemetry_kind::request_cancelled
                       : telemetry_kind::request_failed;
      st_.ctx->emit(kind, [&] {
      return telemetry_event{kind, st_.spec->id, it->second.thread_id, r.request_id, {}, {}, r.iterations,
                     steady_us() - it->second.started_us,
                     r.ok() ? std::string{} : std::get<error_info>(r.outcome).type + ": " +
                                                  std::get<error_info>(r.outcome).message};
    });
      send_reply(it->second.reply_to, std::move(r));
      st_.requests.erase(it);
    }
    slot.active_request.clear();
    slot.waiting_tools.clear();
    slot.running_tools.clear();
    start_next(slot);
  }

  void start_next(thread_slot& slot) {
    if (slot.queue.empty() || !slot.active_request.empty()) return;
    queued_ask next = std::move(slot.queue.front());
    slot.queue.erase(slot.queue.begin());
    st_.requests.erase(next.q.request_id);
    start(slot, std::move(next.q), std::move(next.from));
  }

  void send_reply(const caf::actor& to, reply r) {
    if (to) self_->send(to, reply_atom::value, std::move(r));
  }

  static reply refused(const std::string& request_id, std::string type, std::string message) {
    return reply{request_id, error_info::of(std::move(type), std::move(message)), {}, 0};
  }

  // The executors this agent uses, monitored so that a crash fails what they ran.
  const caf::actor& llm_executor() { return executor(st_.llm_executor, st_.ctx->llm_executors); }
  const caf::actor& tool_executor() { return executor(st_.tool_executor, st_.ctx->tool_executors); }
  const caf::actor& executor(caf::actor& current, const executor_pool& pool) {
    if (!current) {
      current = pool.pick(st_.executor_key);
      if (current) self_->monitor(current);
    }
    return current;
  }

  agent_self* self_;
  agent_state& st_;
};

caf::behavior agent_behavior(agent_self* self, std::shared_ptr<const agent_spec> spec,
                             std::shared_ptr<runtime_context> ctx,
                             std::shared_ptr<const react_config> config) {
  auto& st = self->state;
  st.spec = std::move(spec);
  st.ctx = std::move(ctx);
  st.config = std::move(config);
  st.provider = st.spec->provider ? st.spec->provider : st.ctx->provider;
  st.executor_key = std::hash<std::string>{}(st.spec->id);
  agent_logic(self).slot_for(agent_logic(self).default_thread_id());

  self->set_down_handler([self](caf::down_msg& m) { agent_logic(self).on_executor_down(m.source); });
  return {
      [self](ask_atom, query q, caf::actor reply_to, bool stream) {
        agent_logic(self).on_ask(std::move(q), std::move(reply_to), stream);
      },
      [self](signal_atom, const std::string& thread_id, const signal& s) {
        agent_logic(self).on_signal(thread_id, s);
      },
      [self](cancel_atom, const std::string& request_id, const std::string& reason) {
        agent_logic(self).on_cancel(request_id, reason);
      },
      [self](snapshot_atom, const std::string& thread_id) -> thread_view {
        return agent_logic(self).snapshot(thread_id);
      },
      [self](stop_atom) {
        agent_logic(self).stop();
        self->quit();
      },
  };
}

}  // namespace

std::shared_ptr<const react_config> make_react_config(const agent_spec& spec, const tool_registry& tools) {
  auto c = std::make_shared<react_config>();
  c->model = spec.model;
  c->system_prompt = spec.system_prompt;
  c->tools = tools.specs(spec.tools);
  c->max_iterations = spec.max_iterations;
  c->params = spec.params;
  c->tool_timeout_ms = spec.tool_timeout.count();
  c->context = spec.context;
  c->summary_model = spec.summary_model;
  return c;
}

caf::actor spawn_agent_actor(caf::actor_system& sys, std::shared_ptr<const agent_spec> spec,
                             std::shared_ptr<runtime_context> ctx,
                             std::shared_ptr<const react_config> config) {
  return sys.spawn(agent_behavior, std::move(spec), std::move(ctx), std::move(config));
}

}  // namespace troupe
