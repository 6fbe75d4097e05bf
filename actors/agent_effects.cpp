// The agent's effects: directives handed to the executors (model calls,
// tool calls at most max_parallel_tools at once, cancels), and the
// executors' answers sent back to the agent as signals.

#include "actors/detail/agent_answer.hpp"
#include "actors/detail/agent_state.hpp"
#include "base/overloaded.hpp"

namespace troupe::detail {

// A request to an executor that bounced because the executor had just died
// is sent again to its replacement, this many times at most.
constexpr int executor_retries = 3;

void agent_logic::dispatch(thread_slot& slot, directive d) {
  const std::string& thread_id = slot.conversation.history().id();
  std::visit(overloaded{[&](llm_stream& x) {
                          report_model_call(slot, x);
                          call_model(thread_id, std::make_shared<const llm_stream>(std::move(x)));
                        },
                        [&](tool_exec& x) {
                          slot.tools.add(std::move(x));
                          pump_tools(slot);
                        },
                        [&](reply& x) { finish(slot, std::move(x)); },
                        [&](request_error& x) {
                          // Only an invalid query gets here: busy threads queue instead.
                          finish(slot, refused(x.request_id, x.reason.c_str(), x.message));
                        },
                        [&](summarize& x) {
                          // A model call of its own, beside the request; its result comes
                          // back like any other and the machine commits it.
                          call_model(
                              thread_id,
                              std::make_shared<const llm_stream>(llm_stream{
                                  x.call_id, x.model, std::move(x.messages), nullptr, x.params, x.request_id, 0, {}}));
                        },
                        [&](awaiting_input& x) { pause(slot, std::move(x)); },
                        [&](decision_answer& x) { answer_decision(slot, std::move(x)); },
                        [&](pass_down& x) { pass_down_to(slot, std::move(x)); },
                        [&](cancel_call& x) {
                          if (x.tool_call_id.empty()) {
                            cancel_model_call(x.call_id);
                          } else {
                            slot.tools.finished(x.tool_call_id);
                            cancel_tool_call(x.call_id, x.tool_call_id);
                          }
                        }},
             d);
}

// Hands waiting tool calls to the executor, at most max_parallel_tools at once.
void agent_logic::pump_tools(thread_slot& slot) {
  const std::string& thread_id = slot.conversation.history().id();
  for (tool_exec& x : slot.tools.ready(st_.profile->max_parallel_tools)) {
    report_tool_call(slot, x);
    run_tool(thread_id, std::make_shared<const tool_exec>(std::move(x)));
  }
}

// To the agent a tool call of this thread asked, which paused on calls of
// its own: a decision taken here for one of them, whose answer (that
// agent's answer, or its next pause) comes back as the call's result; or a
// cancel of its request, answered by nobody here.
void agent_logic::pass_down_to(thread_slot& slot, pass_down x) {
  const std::string& thread_id = slot.conversation.history().id();
  const auto target = st_.ctx->agents.find(x.agent_id);
  if (auto* c = std::get_if<cancel>(&x.what)) {
    if (target)
      self_->request(*target, caf::infinite, cancel_atom::value, x.thread_id, c->request_id, c->reason)
          .then([](const reply&) {}, [](const caf::error&) {});
    return;
  }
  slot.tools.running_elsewhere(x.tool_call_id);
  auto back = [self = self_, thread_id, x](tool_outcome outcome) {
    agent_logic l(self);
    l.on_signal(thread_id, signal{tool_result{x.call_id, x.tool_call_id, x.tool_name, std::move(outcome)}});
    l.unload_idle_threads();
  };
  if (!target) {
    decide_elsewhere(thread_id, std::move(x), back);
    return;
  }
  self_
      ->request(*target, caf::infinite, decide_atom::value, x.thread_id, std::get<decision>(std::move(x.what)),
                event_sink_actor{})
      .then([back, agent_id = x.agent_id,
             thread = x.thread_id](const reply& r) { back(agent_answer_outcome(agent_id, thread, r)); },
            [back, agent_id = x.agent_id, self = self_](const caf::error& e) {
              back(error_info::of(error_type::agent_failed,
                                  "agent " + agent_id + " did not answer: " + self->system().render(e)));
            });
}

// A decision for an agent that does not run here: through the tool that
// asked it, when that tool knows where the agent runs (a cluster's agent
// tool); its answer comes back to this agent as the call's result, as a
// message (it is answered on another thread).
void agent_logic::decide_elsewhere(const std::string& thread_id, pass_down x,
                                   const std::function<void(tool_outcome)>& back) {
  const auto asked_by = st_.ctx->tools.find(x.tool_name);
  if (!asked_by || !asked_by->definition().decide_elsewhere) {
    back(error_info::of(error_type::agent_stopped, "agent " + x.agent_id + " is not running"));
    return;
  }
  decision d = std::get<decision>(std::move(x.what));
  asked_by->definition().decide_elsewhere(x.agent_id, x.thread_id, std::move(d),
                                          [self = caf::actor_cast<agent_actor>(self_), thread_id, x](const reply& r) {
                                            caf::anon_send(
                                                self, signal_atom::value, thread_id,
                                                signal{tool_result{x.call_id, x.tool_call_id, x.tool_name,
                                                                   agent_answer_outcome(x.agent_id, x.thread_id, r)}});
                                          });
}

// A call goes to a live executor of the pool, and its answer comes back as
// a signal for the thread, whichever executor ran it. A call that bounced
// off an executor that had just died goes to its replacement; `lost` makes
// the result of a call no executor could take.
template <class Result, class Pool, class Lost, class... Args>
void agent_logic::call_executor(Pool& pool, const std::string& thread_id, Lost lost, int retries, Args... args) {
  auto executor = pool.pick(st_.executor_key);
  self_->request(executor, caf::infinite, exec_atom::value, args...)
      .then(
          [self = self_, thread_id](Result& r) {
            agent_logic l(self);
            l.on_signal(thread_id, signal{std::move(r)});
            l.unload_idle_threads();
          },
          [self = self_, &pool, thread_id, lost, retries, executor, args...](caf::error& e) {
            agent_logic l(self);
            if (e == caf::sec::request_receiver_down && retries > 0) {
              pool.replace(executor);
              l.call_executor<Result>(pool, thread_id, lost, retries - 1, args...);
              return;
            }
            l.on_signal(thread_id, signal{lost(l.executor_lost(e))});
          });
}

void agent_logic::call_model(const std::string& thread_id, std::shared_ptr<const llm_stream> x) {
  call_executor<llm_result>(
      st_.ctx->llm_executors, thread_id,
      [x](error_info e) {
        return llm_result{x->call_id, std::move(e)};
      },
      executor_retries, x, caf::actor_cast<agent_actor>(self_), thread_id, provider());
}

void agent_logic::run_tool(const std::string& thread_id, std::shared_ptr<const tool_exec> x) {
  call_executor<tool_result>(
      st_.ctx->tool_executors, thread_id,
      [x](error_info e) {
        return tool_result{x->call_id, x->tool_call_id, x->tool_name, std::move(e)};
      },
      executor_retries, x, thread_id, st_.id);
}

error_info agent_logic::executor_lost(const caf::error& e) {
  return error_info::of(error_type::executor_crashed, "no executor could take the call: " + self_->system().render(e));
}

void agent_logic::cancel_model_call(const std::string& call_id) {
  self_->send(st_.ctx->llm_executors.pick(st_.executor_key), cancel_atom::value, call_id);
}

void agent_logic::cancel_tool_call(const std::string& call_id, const std::string& tool_call_id) {
  self_->send(st_.ctx->tool_executors.pick(st_.executor_key), cancel_atom::value, call_id, tool_call_id);
}

}  // namespace troupe::detail
