// The agent's intake: asks, cancels and decisions from callers, and what
// the executors send back, arriving; each thread's request queue (one
// request runs, the others wait in order); a request's start and end, and
// its pause for a person.

#include "actors/detail/agent_state.hpp"
#include "json/utf8.hpp"
#include "strategy/approvals.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

namespace troupe::detail {

namespace {

// A draining agent whose last request just ended is told to drain again:
// as a message, so that it stops after what it is doing now, and only if
// it still runs nothing then (agent_actor.cpp, handle_drain).
void recheck_drain(const agent_state& st, const agent_actor& self) {
  if (st.draining && !st.stopping && !st.thread_of) caf::anon_send(self, drain_atom::value);
}

}  // namespace

caf::result<reply> agent_logic::on_ask(query q, event_sink_actor events) {
  if (q.thread_id.empty()) q.thread_id = default_thread_id();
  if (st_.draining) return refused(q.request_id, error_type::agent_stopped, draining_refusal());
  if (st_.stopping) return refused(q.request_id, error_type::shutdown, "the agent is stopping");
  if (q.request_id.empty()) return refused(q.request_id, error_type::invalid_query, "a query needs a request_id");
  if (!is_valid_utf8(q.request_id) || !is_valid_utf8(q.thread_id))
    return refused(valid_utf8(q.request_id), error_type::invalid_query,
                   "a request id and a thread id must be valid UTF-8 (" + valid_utf8(q.request_id) + ", " +
                       valid_utf8(q.thread_id) + ")");
  // The question is committed as it is asked: bytes that are not UTF-8 (a
  // terminal in another locale) are mended here, not refused.
  repair_utf8(q);
  if (st_.thread_of && st_.thread_of->count(q.request_id))
    return refused(q.request_id, error_type::duplicate_request,
                   "request " + q.request_id + " is already running on this agent");
  auto where = slot_for(q.thread_id, q.request_id);
  if (auto* refusal = std::get_if<reply>(&where)) return std::move(*refusal);
  thread_slot* slot = std::get<thread_slot*>(where);
  const auto admission = slot->asks.admit();
  if (admission == request_queue<queued_ask>::admission::full)
    return refused(
        q.request_id, error_type::queue_full,
        "thread " + q.thread_id + " already has " + std::to_string(st_.profile->max_queued_asks) + " asks waiting");
  auto promise = self_->make_response_promise<reply>();
  asker from{promise_guard<reply>(promise, q.request_id, &agent_crashed), std::move(events), steady_us()};
  if (!st_.thread_of) st_.thread_of = std::make_unique<std::unordered_map<std::string, std::string>>();
  (*st_.thread_of)[q.request_id] = q.thread_id;
  if (admission == request_queue<queued_ask>::admission::start_now)
    start(*slot, std::move(q), std::move(from));
  else
    slot->asks.push(queued_ask{std::move(q), std::move(from)});
  return caf::delegated<reply>();
}

// A person's decision on a call a paused request waits for. It steps the
// thread like any signal (after a load, when the thread is not in
// memory: a pause outlives its process); the step's decision_answer
// answers it (answer_decision).
caf::result<reply> agent_logic::on_decide(std::string thread_id, decision d, event_sink_actor events) {
  if (thread_id.empty()) thread_id = default_thread_id();
  if (st_.draining) return refused(d.request_id, error_type::agent_stopped, draining_refusal());
  if (st_.stopping) return refused(d.request_id, error_type::shutdown, "the agent is stopping");
  if (!is_valid_utf8(d.request_id) || !is_valid_utf8(d.tool_call_id) || !is_valid_utf8(thread_id) ||
      !is_valid_utf8(d.idempotency_key))
    return refused(valid_utf8(d.request_id), error_type::invalid_query,
                   "a decision's request id, tool call id, thread id and idempotency key must be valid UTF-8");
  signal s{std::move(d)};
  repair_utf8(s);  // the person's message and the edited arguments are committed
  const decision& taken = std::get<decision>(s);
  auto where = slot_for(thread_id, taken.request_id);
  if (auto* refusal = std::get_if<reply>(&where)) return std::move(*refusal);
  thread_slot& slot = *std::get<thread_slot*>(where);
  if (!st_.snapshots) st_.snapshots = std::make_unique<snapshot_waiters>();
  st_.snapshots->decisions.push_back(
      waiting_decision{thread_id, taken.request_id, taken.tool_call_id, taken.idempotency_key,
                       promise_guard<reply>(self_->make_response_promise<reply>(), taken.request_id, &agent_crashed),
                       std::move(events)});
  run(slot, s);
  pump_tools(slot);
  return caf::delegated<reply>();
}

// A cancel for a request whose ask has ended (it paused): it steps the
// thread, loaded if need be, as a decide does, and its answer follows the
// request to its end (answer_decision).
caf::result<reply> agent_logic::on_cancel_ended(std::string thread_id, const std::string& request_id,
                                                const std::string& reason) {
  if (thread_id.empty()) thread_id = default_thread_id();
  if (st_.draining) return refused(request_id, error_type::agent_stopped, draining_refusal());
  if (st_.stopping) return refused(request_id, error_type::shutdown, "the agent is stopping");
  if (st_.thread_of && st_.thread_of->count(request_id)) {  // a decide continued it, and follows it
    on_cancel(request_id, reason);
    return refused(request_id, error_type::cancelled, reason);
  }
  auto where = slot_for(thread_id, request_id);
  if (auto* refusal = std::get_if<reply>(&where)) return std::move(*refusal);
  thread_slot& slot = *std::get<thread_slot*>(where);
  if (!st_.snapshots) st_.snapshots = std::make_unique<snapshot_waiters>();
  st_.snapshots->decisions.push_back(
      waiting_decision{thread_id,
                       request_id,
                       {},
                       {},
                       promise_guard<reply>(self_->make_response_promise<reply>(), request_id, &agent_crashed),
                       {}});
  run(slot, signal{cancel{request_id, reason, {}, true}});
  pump_tools(slot);
  return caf::delegated<reply>();
}

// What executors send: what the model and the tools said comes in here,
// mended to UTF-8 before anything commits it or streams it to a caller.
void agent_logic::on_signal(const std::string& thread_id, signal s) {
  thread_slot* slot = st_.threads.find(thread_id);
  if (!slot) {
    // A pause outlives its thread's stay in memory: its deadline loads it.
    if (const auto* tick = std::get_if<approval_tick>(&s); tick && !st_.stopping) {
      auto where = slot_for(thread_id, tick->request_id);
      if (auto* loaded = std::get_if<thread_slot*>(&where)) {
        run(**loaded, s);
        pump_tools(**loaded);
      }
    }
    return;  // otherwise unloaded since: whatever this was for has ended
  }
  repair_utf8(s);
  if (slot->phase != slot_phase::ready) {
    slot->held.push_back({std::move(s), true});
    return;
  }
  handle_signal(*slot, s);
}

void agent_logic::on_cancel(const std::string& request_id, const std::string& reason) {
  if (!st_.thread_of) return;
  auto where = st_.thread_of->find(request_id);
  if (where == st_.thread_of->end()) return;
  thread_slot& slot = *st_.threads.find(where->second);
  if (slot.asks.running() == request_id) {
    run(slot, cancel{request_id, reason});
    return;
  }
  if (auto queued = slot.asks.remove(request_id)) {
    forget_request(where);
    queued->from.answer.deliver(refused(request_id, error_type::cancelled, reason));
    recheck_drain(st_, handle());
  }
}

// What arrived from an executor for a ready thread.
void agent_logic::handle_signal(thread_slot& slot, const signal& s) {
  if (auto* r = std::get_if<tool_result>(&s); r && !slot.tools.finished(r->tool_call_id)) return;
  if (auto seen = observe(slot.conversation.state(), s, slot.running && slot.running->events))
    report(slot, std::move(*seen), s);
  run(slot, s);
  pump_tools(slot);
}

void agent_logic::start(thread_slot& slot, query q, asker from) {
  slot.asks.begin(q.request_id);
  slot.running = std::make_unique<asker>(std::move(from));
  trace_request(slot, q);
  report(telemetry_kind::request_started, q.thread_id, q.request_id);
  // A lease that ran out while the thread sat idle may have been taken by
  // another process, which may have written since: take it again, and
  // the thread with it, before this request steps on it.
  if (slot.phase == slot_phase::ready && slot.lease && wall_clock_ms() >= slot.lease->expires_at_ms)
    reload(slot, q.thread_id);
  run(slot, signal{std::move(q)});
}

void agent_logic::finish(thread_slot& slot, reply r) {
  const std::string& thread_id = slot.conversation.history().id();
  if (slot.running && slot.asks.running() == r.request_id) {
    if (st_.stopping && !r.ok() && std::get<error_info>(r.outcome).type == error_type::cancelled)
      r.outcome = error_info::of(error_type::shutdown, "the agent stopped before the request finished");
    report_request_end(slot, r);
    forget_request(r.request_id);
    slot.running->deliver(std::move(r));
    slot.running.reset();
  }
  slot.asks.end();
  // A paused request's free calls still run, and their results still count.
  if (!slot.conversation.state().busy()) slot.tools.clear();
  slot.trace.reset();
  st_.threads.touch(thread_id, steady_ms());
  if (auto next = slot.asks.take_next()) start(slot, std::move(next->q), std::move(next->from));
  recheck_drain(st_, handle());
}

// Ends the running ask and every queued one with an error, and forgets
// what was held for them: for a thread that could not be loaded.
void agent_logic::fail_every_ask(thread_slot& slot, const char* type, const std::string& message) {
  slot.held.clear();
  if (slot.running) {
    const std::string id = slot.asks.running();
    forget_request(id);
    slot.running->deliver(refused(id, type, message));
    slot.running.reset();
  }
  fail_queued_asks(slot, type, message);
  recheck_drain(st_, handle());
}

// Answers every ask still waiting in the thread's queue with an error.
void agent_logic::fail_queued_asks(thread_slot& slot, const char* type, const std::string& message) {
  for (auto& waiting : slot.asks.drain()) {
    forget_request(waiting.q.request_id);
    waiting.from.answer.deliver(refused(waiting.q.request_id, type, message));
  }
}

// Answers the decides still waiting (for one thread, or all) with an error.
void agent_logic::fail_decisions(const std::string* thread_id, const char* type, const std::string& message) {
  if (!st_.snapshots) return;
  std::erase_if(st_.snapshots->decisions, [&](waiting_decision& w) {
    if (thread_id && w.thread_id != *thread_id) return false;
    w.answer.deliver(refused(w.request_id, type, message));
    return true;
  });
  if (st_.snapshots->empty()) st_.snapshots.reset();
}

// Refused before anything of it is committed: the caller may ask again
// wherever the agent runs next.
std::string agent_logic::draining_refusal() const {
  return "agent " + st_.id + " is being drained: it takes nothing new while its running requests finish";
}

// A draining agent stops once it runs nothing: no request running or
// queued, no decision waiting for its thread.
bool agent_logic::drained() const {
  return st_.draining && !st_.stopping && !st_.thread_of && (!st_.snapshots || st_.snapshots->decisions.empty());
}

agent_stats agent_logic::stats() const {
  agent_stats out{st_.threads.size(), st_.thread_of ? st_.thread_of->size() : 0, 0, 0, st_.stopping, st_.draining};
  st_.threads.for_each([&](const std::string&, thread_slot& slot) {
    out.commits_in_flight += slot.phase == slot_phase::committing;
    out.held_signals += slot.held.size();
  });
  return out;
}

// Ends every request with a shutdown error: running ones through the
// machine (so their tool calls get results), queued ones directly. Threads
// still loading end their asks at once. True when nothing is left in
// flight with the store; otherwise the agent quits once it is.
bool agent_logic::stop() {
  st_.stopping = true;
  std::vector<std::string> loading;
  st_.threads.for_each([&](const std::string& id, thread_slot& slot) {
    if (slot.phase == slot_phase::loading) {
      fail_every_ask(slot, error_type::shutdown, "the agent is stopping");
      loading.push_back(id);
      return;
    }
    fail_queued_asks(slot, error_type::shutdown, "the agent is stopping");
    if (!slot.asks.running().empty())
      run(slot, cancel{slot.asks.running(), "the agent is stopping", error_type::shutdown});
  });
  for (const auto& id : loading) st_.threads.erase(id);
  fail_decisions(nullptr, error_type::shutdown, "the agent is stopping");
  return settled();
}

// The request paused: its ask (or the decide that continued it) is
// answered with the calls that wait, and the thread is free for the
// tools of the turn that still run. An approval_tick is due at the
// earliest deadline.
void agent_logic::pause(thread_slot& slot, awaiting_input x) {
  schedule_expiry(slot);
  if (slot.running && slot.running->events)
    self_->send(slot.running->events, event_atom::value,
                stream_event{approval_requested_event{x.request_id, x.pending,
                                                      newest_entry_of(slot.conversation.history(), x.request_id)}});
  finish(slot, paused_reply(x.request_id, x.usage, x.iterations, std::move(x.pending)));
}

// A paused request hears an approval_tick at its earliest deadline: when
// it pauses, and when its thread is loaded paused (after a restart).
void agent_logic::schedule_expiry(thread_slot& slot) {
  const react_state& state = slot.conversation.state();
  if (state.status != react_status::awaiting_input) return;
  std::int64_t due = std::numeric_limits<std::int64_t>::max();
  for (const pending_tool_call& p : state.tool_calls)
    if (p.awaiting_until) due = std::min(due, p.awaiting_until);
  if (due == std::numeric_limits<std::int64_t>::max()) return;  // none, or no deadline
  self_->delayed_send(self_, std::chrono::milliseconds(std::max<std::int64_t>(0, due - now_ms())), signal_atom::value,
                      slot.conversation.history().id(), signal{approval_tick{state.request_id.str()}});
}

// A paused request runs again, followed by `from`: its end will be
// reported, and a start before it keeps every count of running requests
// whole (the pause was an end). A cancel finds it as any running request.
// A subscriber hears the start of each free call of the turn still
// running, as if it had asked: it will hear their ends.
void agent_logic::run_again(thread_slot& slot, const std::string& request_id, asker from) {
  const std::string& thread_id = slot.conversation.history().id();
  slot.asks.begin(request_id);
  slot.running = std::make_unique<asker>(std::move(from));
  report(telemetry_kind::request_started, thread_id, request_id);
  if (slot.running->events)
    for (const std::string& id : slot.tools.running())
      for (const pending_tool_call& p : slot.conversation.state().tool_calls)
        if (p.call.id == id)
          self_->send(slot.running->events, event_atom::value,
                      stream_event{tool_started_event{request_id, id, p.call.name, p.call.arguments,
                                                      newest_entry_of(slot.conversation.history(), request_id)}});
  if (!st_.thread_of) st_.thread_of = std::make_unique<std::unordered_map<std::string, std::string>>();
  (*st_.thread_of)[request_id] = thread_id;
}

// The reply a request that ran on from a decision ended with (or paused
// again with), as its thread records it: for a decision repeated after
// that. The token usage and iterations are not in the thread.
reply agent_logic::reply_of_ended(const thread_view& t, const std::string& request_id) {
  if (auto pending = pending_approvals(t, request_id); !pending.empty())
    return paused_reply(request_id, {}, 0, std::move(pending));
  if (const entry* newest = newest_entry_of_request(t, request_id))
    if (auto end = recorded_end(*newest, request_id)) return std::move(*end);
  return refused(request_id, error_type::already_decided,
                 "the request of this decision went on, and its thread does not show how it ended");
}

reply agent_logic::paused_reply(const std::string& request_id, token_usage usage, int iterations,
                                std::vector<open_approval> pending) {
  const std::string message =
      std::to_string(pending.size()) + " tool call(s) of request " + request_id + " wait for a decision";
  return reply{request_id, error_info::of(error_type::awaiting_input, message), usage, iterations, std::move(pending)};
}

// A decision's step answered it: the decide hears the refusal, that the
// request still waits, or (once the decision was taken) the request's
// next pause or end, as its running ask, whose subscriber then hears the
// request's stream events as an ask's would.
void agent_logic::answer_decision(thread_slot& slot, decision_answer x) {
  if (!st_.snapshots) return;
  const std::string& thread_id = slot.conversation.history().id();
  auto& all = st_.snapshots->decisions;
  auto it = std::find_if(all.begin(), all.end(), [&](const waiting_decision& w) {
    return w.thread_id == thread_id && w.request_id == x.request_id && w.tool_call_id == x.tool_call_id &&
           w.idempotency_key == x.idempotency_key;
  });
  if (it == all.end()) return;
  promise_guard<reply> answer = std::move(it->answer);
  event_sink_actor events = std::move(it->events);
  all.erase(it);
  if (st_.snapshots->empty()) st_.snapshots.reset();
  recheck_drain(st_, handle());
  if (x.error) return answer.deliver(refused(x.request_id, x.error->type.c_str(), x.error->message));
  if (x.ended) return answer.deliver(std::move(*x.ended));
  const react_state& state = slot.conversation.state();
  const bool same = state.request_id == x.request_id;
  if (same && state.status == react_status::awaiting_input)
    return answer.deliver(paused_reply(x.request_id, state.request_usage, state.iteration,
                                       pending_approvals(slot.conversation.history(), x.request_id)));
  if (same && (x.taken || state.busy()) && !slot.running && slot.asks.running().empty())
    return run_again(slot, x.request_id, asker{std::move(answer), std::move(events), steady_us()});
  if (!x.taken) {  // the same decision again, taken before: answered as the first was
    if (same && state.busy() && slot.running && slot.asks.running() == x.request_id)
      return slot.running->repeats.push_back(std::move(answer));
    if (!(same && state.busy())) return answer.deliver(reply_of_ended(slot.conversation.history(), x.request_id));
  }
  answer.deliver(refused(
      x.request_id, error_type::already_decided,
      "tool call " + x.tool_call_id + " of request " + x.request_id + " was decided already, and the request went on"));
}

}  // namespace troupe::detail
