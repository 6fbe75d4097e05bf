#include "actors/agent_actor.hpp"

#include "actors/agent_observe.hpp"
#include "actors/promise_guard.hpp"
#include "actors/request_queue.hpp"
#include "actors/request_trace.hpp"
#include "actors/thread_table.hpp"
#include "actors/tool_parallelism.hpp"
#include "runtime/clock.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/store_executor.hpp"
#include "runtime/telemetry/genai_messages.hpp"
#include "runtime/thrown_by.hpp"
#include "signals/overloaded.hpp"
#include "signals/utf8.hpp"
#include "strategy/approvals.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <variant>

namespace troupe {

namespace {

reply refused(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

// The seq of the request's newest entry (stream_event.hpp's thread_seq). A
// running request's entries end the thread, but for a summary or two, so
// the walk back is short.
std::uint64_t newest_entry_of(const thread_view& t, std::string_view request_id) {
  for (std::uint64_t seq = t.size(); seq-- > 0;)
    if (const entry* e = t.at_seq(seq); e && e->refs.request_id() == request_id) return seq;
  return 0;
}

// What an ask is answered with when the agent dies before its end.
reply agent_crashed(const std::string& request_id) {
  return refused(request_id, error_type::agent_crashed, "the agent stopped before the request finished");
}

// Who waits for a request: the answer, and where its stream events go.
struct asker {
  promise_guard<reply> answer;
  event_sink_actor events;  // invalid: nobody subscribed
  std::int64_t started_us = 0;
};

// A decide waiting for its step's answer (decision_answer).
struct waiting_decision {
  std::string thread_id;
  std::string request_id;
  std::string tool_call_id;
  std::string idempotency_key;
  promise_guard<reply> answer;
};

struct queued_ask {
  query q;
  asker from;
  const std::string& request_id() const { return q.request_id; }
};

// Where a thread stands with the store. Signals for a thread that is being
// loaded, or whose last step is being committed, wait in order until it is
// ready: the machine only ever steps on what the store holds.
enum class slot_phase : std::uint8_t { loading, ready, committing };

// A signal that came while the thread was not ready. From an executor, it is
// handled as on arrival (observed, and checked against the running tools).
struct held_signal {
  signal s;
  bool from_executor;
};

// One thread of the agent: its history and machine state, its asks, and the
// tool calls of the current turn.
struct thread_slot {
  thread_slot(react_thread rt, std::size_t queue_bound, slot_phase p = slot_phase::ready)
      : conversation(std::move(rt)), asks(queue_bound), phase(p) {}

  react_thread conversation;
  request_queue<queued_ask> asks;
  // The asker of asks.running(); on the heap, since a thread in memory
  // mostly runs nothing, and held in place it made every thread's slot
  // 104 bytes larger (and the table's node a jemalloc class larger).
  std::unique_ptr<asker> running;
  tool_parallelism tools;
  std::int64_t llm_started_us = 0;
  slot_phase phase;
  std::uint32_t commit_no = 0;  // which commit `pending` is (beside phase: a slot 8 bytes smaller)
  // The step being committed, and the running request's spans: each held
  // apart, since a thread in memory mostly has neither (a step is large).
  std::unique_ptr<react_thread::prepared_step> pending;
  std::unique_ptr<thread_lease> lease;   // with a store that keeps leases
  std::vector<held_signal> held;         // not a deque: an empty one allocates about 600 bytes
  std::unique_ptr<request_trace> trace;  // null: the running request is not traced

  // A paused request leaves its thread idle (the store holds the pause),
  // once no call of its turn still runs.
  bool idle() const {
    return phase == slot_phase::ready && held.empty() && asks.idle() && conversation.state().summary_call_id.empty() &&
           tools.running().empty();
  }
};

// A thread in memory is one node of the thread table: the slot and 56 bytes
// (its key, its LRU link, the hash node's own). Up to 584 bytes keep it in
// jemalloc's 640-byte class; a field more that a thread mostly does without
// belongs on the heap, as the asker, the lease and the pending step are.
#ifndef _GLIBCXX_DEBUG  // its containers are larger
static_assert(sizeof(void*) != 8 || sizeof(thread_slot) <= 584,
              "thread_slot grew past 584 bytes: every loaded thread moves to a larger size class");
#endif

// A seeded agent's ids, and the time its entries are stamped with: a
// logical clock of its own, one millisecond per reading, so that a run
// repeats to the byte.
struct seeded_source {
  random_ids ids;
  std::int64_t logical_ms;
};

// Snapshots of threads not in memory, waiting for the store; decides
// waiting for their step (rare too, and held here so that an agent's state
// stays in its size class).
struct snapshot_waiters {
  std::unordered_map<std::uint64_t, caf::typed_response_promise<thread_view>> waiting;
  std::uint64_t next = 0;
  std::vector<waiting_decision> decisions;

  bool empty() const { return waiting.empty() && decisions.empty(); }
};

// Rarely used parts (a seed, snapshots waiting for the store, the requests
// of an idle agent) are held on the heap: an agent's state beside CAF's
// actor is one allocation, and these kept it a jemalloc class larger
// (1,536 bytes instead of 1,280).
struct agent_state {
  static inline const char* name = "troupe.agent";

  std::string id;
  std::shared_ptr<const agent_profile> profile;
  std::shared_ptr<const react_config> config;        // shared, without the prompt
  std::shared_ptr<const std::string> system_prompt;  // the agent's own; null: none
  std::shared_ptr<runtime_context> ctx;
  // With a seeded runtime; null otherwise, when ids come from the scheduler
  // thread's own source (agent_logic::ids).
  std::unique_ptr<seeded_source> seeded;
  std::size_t executor_key = 0;
  thread_table<thread_slot> threads;
  // Running and queued requests: the thread each is for. Null while there
  // are none, as with most agents at any time.
  std::unique_ptr<std::unordered_map<std::string, std::string>> thread_of;
  std::unique_ptr<snapshot_waiters> snapshots;  // made by the first snapshot or decide that waits
  bool stopping = false;
  bool quit_when_settled = false;  // stopping, but commits are still in flight
  // False once the agent has quit: a load still queued for it then takes no
  // lease, and one that took a lease meanwhile gives it back. Made with the
  // first load that goes to a store thread (most agents never need it).
  std::shared_ptr<std::atomic<bool>> alive;
};

using agent_self = agent_actor::stateful_pointer<agent_state>;

// The state rides in CAF's own allocation of the actor (1,032 bytes of CAF
// 0.17 on x86-64 with the storage's header): up to 248 bytes keep the
// whole in jemalloc's 1,280-byte class. A field more belongs in a part held
// on the heap.
#ifndef _GLIBCXX_DEBUG  // its containers are larger
static_assert(sizeof(void*) != 8 || sizeof(agent_state) <= 248,
              "agent_state grew past 248 bytes: every agent's actor allocation moves to a larger size class");
#endif

// Where a seeded agent's logical clock starts: 2026-01-01T00:00:00Z.
constexpr std::int64_t seeded_epoch_ms = 1'767'225'600'000;

// A request to an executor that bounced because the executor had just died
// is sent again to its replacement, this many times at most.
constexpr int executor_retries = 3;

// The behaviour's logic, as functions of the actor.
class agent_logic {
 public:
  explicit agent_logic(agent_self self) : self_(self), st_(self->state) {}

  std::string default_thread_id() const { return st_.id + ":default"; }

  caf::result<reply> on_ask(query q, event_sink_actor events) {
    if (q.thread_id.empty()) q.thread_id = default_thread_id();
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
  caf::result<reply> on_decide(std::string thread_id, decision d) {
    if (thread_id.empty()) thread_id = default_thread_id();
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
    st_.snapshots->decisions.push_back(waiting_decision{
        thread_id, taken.request_id, taken.tool_call_id, taken.idempotency_key,
        promise_guard<reply>(self_->make_response_promise<reply>(), taken.request_id, &agent_crashed)});
    run(slot, s);
    pump_tools(slot);
    return caf::delegated<reply>();
  }

  // What executors send: what the model and the tools said comes in here,
  // mended to UTF-8 before anything commits it or streams it to a caller.
  void on_signal(const std::string& thread_id, signal s) {
    thread_slot* slot = st_.threads.find(thread_id);
    if (!slot) return;  // unloaded since: whatever this was for has ended
    repair_utf8(s);
    if (slot->phase != slot_phase::ready) {
      slot->held.push_back({std::move(s), true});
      return;
    }
    handle_signal(*slot, s);
  }

  // A thread loaded by a store thread (see begin_load), or the store's error.
  void on_loaded(const std::string& thread_id, loaded_thread& loaded, lease_held& lease) {
    thread_slot* slot = st_.threads.find(thread_id);
    if (!slot || slot->phase != slot_phase::loading) {
      if (lease) release(thread_id, *lease);  // nobody wants it any more
      return;
    }
    if (!loaded) {
      fail_every_ask(*slot, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
      fail_decisions(&thread_id, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
      st_.threads.erase(thread_id);
      return;
    }
    slot->conversation = std::move(*loaded);
    slot->lease = lease ? std::make_unique<thread_lease>(std::move(*lease)) : nullptr;
    slot->phase = slot_phase::ready;
    report(telemetry_kind::thread_loaded, thread_id, {});
    schedule_expiry(*slot);
    release_held(*slot);
  }

  // The store's answer to the commit of a thread's pending step.
  void on_committed(const std::string& thread_id, std::uint64_t commit_no, commit_outcome& outcome) {
    thread_slot* slot = st_.threads.find(thread_id);
    if (!slot || slot->phase != slot_phase::committing || slot->commit_no != commit_no) return;
    react_thread::prepared_step step = std::move(*slot->pending);
    slot->pending.reset();
    slot->phase = slot_phase::ready;
    if (outcome)
      take(*slot, std::move(step));
    else
      fail_on_store(*slot, outcome.error());
    pump_tools(*slot);
    release_held(*slot);
  }

  // A snapshot read from the store for a thread not in memory.
  void on_viewed(std::uint64_t no, const std::string& thread_id, stored<thread>& held) {
    if (!st_.snapshots) return;
    auto it = st_.snapshots->waiting.find(no);
    if (it == st_.snapshots->waiting.end()) return;
    it->second.deliver(held ? thread_view(*held) : thread_view(thread(thread_id, now_ms())));
    st_.snapshots->waiting.erase(it);
    if (st_.snapshots->empty()) st_.snapshots.reset();  // numbers start over: none is still awaited
  }

  void on_cancel(const std::string& request_id, const std::string& reason) {
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
    }
  }

  // A loaded thread as it is now (what the store holds: not a step whose
  // commit is in flight); otherwise the store's, without loading it.
  caf::result<thread_view> snapshot(const std::string& requested) {
    const std::string id = requested.empty() ? default_thread_id() : requested;
    if (thread_slot* slot = st_.threads.find(id); slot && slot->phase != slot_phase::loading)
      return slot->conversation.history();
    if (stores().immediate()) {
      if (auto held = stores().store().load(id)) return thread_view(*held);
      return thread_view(thread(id, now_ms()));
    }
    if (!st_.snapshots) st_.snapshots = std::make_unique<snapshot_waiters>();
    const std::uint64_t no = st_.snapshots->next++;
    st_.snapshots->waiting.emplace(no, self_->make_response_promise<thread_view>());
    stores().submit([self = handle(), store = stores().shared_store(), deadline = stores().deadline(), no,
                     id](store_job_status why) {
      stored<thread> held = not_run(why, deadline);
      if (why == store_job_status::run)
        if (auto what = thrown_by([&] { held = store->load(id); }))
          held = store_error{"internal", "the store threw: " + *what};
      caf::anon_send(self, viewed_atom::value, no, id, std::move(held));
    });
    return caf::delegated<thread_view>();
  }

  agent_stats stats() const {
    agent_stats out{st_.threads.size(), st_.thread_of ? st_.thread_of->size() : 0, 0, 0, st_.stopping};
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
  bool stop() {
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

  // Stops the agent, giving up its leases on the way out; snapshots still
  // waiting for the store are answered with an error (CAF does not answer
  // the promises of an actor that is gone).
  void quit() {
    release_leases();
    if (st_.alive) st_.alive->store(false);
    if (st_.snapshots)
      for (auto& [no, promise] : st_.snapshots->waiting)
        promise.deliver(caf::make_error(caf::sec::request_receiver_down));
    st_.snapshots.reset();
    self_->quit();
  }

  // Nothing in flight with the store.
  bool settled() {
    bool all = true;
    st_.threads.for_each([&](const std::string&, thread_slot& slot) { all = all && slot.phase == slot_phase::ready; });
    return all;
  }

  // After the store answered: a stopping agent quits once nothing is in
  // flight with the store; otherwise idle threads may leave memory.
  void after_store_answer() {
    if (st_.quit_when_settled) {
      if (settled()) quit();
      return;
    }
    unload_idle_threads();
  }

  // After each message: idle threads beyond the limits leave memory.
  void unload_idle_threads() {
    st_.threads.evict(steady_ms(), [&](const std::string& id, thread_slot& slot) {
      if (slot.lease) release(id, *slot.lease);
      report(telemetry_kind::thread_unloaded, id, {});
    });
  }

 private:
  // The thread's slot, in memory (or being loaded) from now on; or the
  // reply refusing `request_id` when the store could not give the thread.
  std::variant<thread_slot*, reply> slot_for(const std::string& thread_id, const std::string& request_id) {
    thread_slot* slot = st_.threads.find(thread_id);
    if (!slot) {
      if (stores().immediate()) {
        auto loaded = load_thread(stores().store(), thread_id, ids(), now_ms());
        if (!loaded)
          return refused(request_id, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
        slot =
            &st_.threads.insert(thread_id, thread_slot(std::move(*loaded), st_.profile->max_queued_asks), steady_ms());
        report(telemetry_kind::thread_loaded, thread_id, {});
        schedule_expiry(*slot);
      } else {
        slot = &begin_load(thread_id);
      }
    }
    st_.threads.touch(thread_id, steady_ms());
    return slot;
  }

  // Answers the decides still waiting (for one thread, or all) with an error.
  void fail_decisions(const std::string* thread_id, const char* type, const std::string& message) {
    if (!st_.snapshots) return;
    std::erase_if(st_.snapshots->decisions, [&](waiting_decision& w) {
      if (thread_id && w.thread_id != *thread_id) return false;
      w.answer.deliver(refused(w.request_id, type, message));
      return true;
    });
    if (st_.snapshots->empty()) st_.snapshots.reset();
  }

  // The request paused: its ask (or the decide that continued it) is
  // answered with the calls that wait, and the thread is free for the
  // tools of the turn that still run. An approval_tick is due at the
  // earliest deadline.
  void pause(thread_slot& slot, awaiting_input x) {
    schedule_expiry(slot);
    finish(slot, paused_reply(x.request_id, x.usage, x.iterations, std::move(x.pending)));
  }

  // A paused request hears an approval_tick at its earliest deadline: when
  // it pauses, and when its thread is loaded paused (after a restart).
  void schedule_expiry(thread_slot& slot) {
    const react_state& state = slot.conversation.state();
    if (state.status != react_status::awaiting_input) return;
    std::int64_t due = std::numeric_limits<std::int64_t>::max();
    for (const pending_tool_call& p : state.tool_calls)
      if (p.awaiting_until) due = std::min(due, p.awaiting_until);
    if (due == std::numeric_limits<std::int64_t>::max()) return;  // none, or no deadline
    self_->delayed_send(self_, std::chrono::milliseconds(std::max<std::int64_t>(0, due - now_ms())), signal_atom::value,
                        slot.conversation.history().id(), signal{approval_tick{state.request_id.str()}});
  }

  static reply paused_reply(const std::string& request_id, token_usage usage, int iterations,
                            std::vector<open_approval> pending) {
    const std::string message =
        std::to_string(pending.size()) + " tool call(s) of request " + request_id + " wait for a decision";
    return reply{request_id, error_info::of(error_type::awaiting_input, message), usage, iterations,
                 std::move(pending)};
  }

  // A decision's step answered it: the decide hears the refusal, that the
  // request still waits, or (once the decision was taken) the request's
  // next pause or end, as its running ask.
  void answer_decision(thread_slot& slot, decision_answer x) {
    if (!st_.snapshots) return;
    const std::string& thread_id = slot.conversation.history().id();
    auto& all = st_.snapshots->decisions;
    auto it = std::find_if(all.begin(), all.end(), [&](const waiting_decision& w) {
      return w.thread_id == thread_id && w.request_id == x.request_id && w.tool_call_id == x.tool_call_id &&
             w.idempotency_key == x.idempotency_key;
    });
    if (it == all.end()) return;
    promise_guard<reply> answer = std::move(it->answer);
    all.erase(it);
    if (st_.snapshots->empty()) st_.snapshots.reset();
    if (x.error) return answer.deliver(refused(x.request_id, x.error->type.c_str(), x.error->message));
    const react_state& state = slot.conversation.state();
    const bool same = state.request_id == x.request_id;
    if (same && state.status == react_status::awaiting_input)
      return answer.deliver(paused_reply(x.request_id, state.request_usage, state.iteration,
                                         pending_approvals(slot.conversation.history(), x.request_id)));
    if (same && (x.taken || state.busy()) && !slot.running && slot.asks.running().empty()) {
      slot.asks.begin(x.request_id);
      slot.running = std::make_unique<asker>(asker{std::move(answer), {}, steady_us()});
      if (!st_.thread_of) st_.thread_of = std::make_unique<std::unordered_map<std::string, std::string>>();
      (*st_.thread_of)[x.request_id] = thread_id;
      return;
    }
    answer.deliver(refused(x.request_id, error_type::already_decided,
                           "tool call " + x.tool_call_id + " of request " + x.request_id +
                               " was decided already, and the request went on"));
  }

  // A request that ran or waited here is done with.
  template <class Key>
  void forget_request(const Key& request) {
    if (!st_.thread_of) return;
    st_.thread_of->erase(request);
    if (st_.thread_of->empty()) st_.thread_of.reset();
  }

  void start(thread_slot& slot, query q, asker from) {
    slot.asks.begin(q.request_id);
    slot.running = std::make_unique<asker>(std::move(from));
    if (request_trace t = start_request_trace(q.traceparent, st_.ctx->record_spans, ids()); t.active()) {
      if (t.record && st_.ctx->record_content) t.question = q.text;
      slot.trace = std::make_unique<request_trace>(std::move(t));
    }
    report(telemetry_kind::request_started, q.thread_id, q.request_id);
    // A lease that ran out while the thread sat idle may have been taken by
    // another process, which may have written since: take it again, and
    // the thread with it, before this request steps on it.
    if (slot.phase == slot_phase::ready && slot.lease && wall_clock_ms() >= slot.lease->expires_at_ms)
      reload(slot, q.thread_id);
    run(slot, signal{std::move(q)});
  }

  store_executor& stores() { return *st_.ctx->stores; }
  agent_actor handle() const { return caf::actor_cast<agent_actor>(self_); }

  static const char* store_error_type(const store_error& e) {
    if (e.type == "timeout") return error_type::store_timeout;
    if (e.type == "owned") return error_type::thread_owned_elsewhere;
    if (e.type == "fenced") return error_type::lease_lost;
    return error_type::store_failed;
  }
  static std::string not_loaded(const std::string& thread_id, const store_error& e) {
    return "thread " + thread_id + " could not be loaded (" + e.type + "): " + e.message;
  }

  // A slot for a thread a store thread is loading (and repairing, as after
  // a crash); its asks wait for on_loaded.
  thread_slot& begin_load(const std::string& thread_id) {
    thread_slot& slot = st_.threads.insert(
        thread_id,
        thread_slot(react_thread(thread(thread_id, now_ms())), st_.profile->max_queued_asks, slot_phase::loading),
        steady_ms());
    load_async(thread_id);
    return slot;
  }

  // Takes the thread's lease and loads it, on a store thread; on_loaded
  // gets both (always: a store that throws is an `internal` error). A thread
  // another owner holds is not loaded ("owned"); a lease taken for a load
  // that failed, or for an agent gone meanwhile, is given back at once.
  void load_async(const std::string& thread_id) {
    if (!st_.alive) st_.alive = std::make_shared<std::atomic<bool>>(true);
    // Seeded, what the load stamps and names (a new thread, a repair) comes
    // from the agent's clock and ids, read here in the agent's own order.
    std::optional<std::int64_t> stamp;
    std::optional<std::uint64_t> id_seed;
    if (st_.ctx->seed) {
      stamp = now_ms();
      id_seed = ids().next_u64();
    }
    stores().acquire_lease_then(
        thread_id, st_.ctx->owner_id, st_.ctx->lease_ttl,
        [self = handle(), store = stores().shared_store(), deadline = stores().deadline(), alive = st_.alive, thread_id,
         stamp, id_seed](store_job_status why, stored<thread_lease> taken) {
          loaded_thread loaded = not_run(why, deadline);
          lease_held lease;
          if (taken) lease = std::move(*taken);
          if (why == store_job_status::run && alive->load()) {
            if (!taken) {
              loaded = taken.error();
            } else if (auto what = thrown_by([&] {
                         // The agent's own source is not for other threads.
                         random_ids ids = id_seed ? random_ids(*id_seed) : random_ids();
                         loaded = load_thread(*store, thread_id, ids, stamp.value_or(wall_clock_ms()), &*lease);
                       })) {
              loaded = store_error{"internal", "the store threw: " + *what};
            }
          }
          if (lease && (!loaded || !alive->load())) {
            thrown_by([&] { store->release_lease(thread_id, *lease); });
            lease.reset();
          }
          caf::anon_send(self, loaded_atom::value, thread_id, std::move(loaded), std::move(lease));
        });
  }

  // Gives a lease up, so that another process need not wait for it to expire.
  void release(const std::string& thread_id, const thread_lease& lease) { stores().release_lease(thread_id, lease); }

  void release_leases() {
    st_.threads.for_each([&](const std::string& id, thread_slot& slot) {
      if (slot.lease) release(id, *slot.lease);
      slot.lease.reset();
    });
  }

  // Ends the running ask and every queued one with an error, and forgets
  // what was held for them: for a thread that could not be loaded.
  void fail_every_ask(thread_slot& slot, const char* type, const std::string& message) {
    slot.held.clear();
    if (slot.running) {
      const std::string id = slot.asks.running();
      forget_request(id);
      slot.running->answer.deliver(refused(id, type, message));
      slot.running.reset();
    }
    fail_queued_asks(slot, type, message);
  }

  // Answers every ask still waiting in the thread's queue with an error.
  void fail_queued_asks(thread_slot& slot, const char* type, const std::string& message) {
    for (auto& waiting : slot.asks.drain()) {
      forget_request(waiting.q.request_id);
      waiting.from.answer.deliver(refused(waiting.q.request_id, type, message));
    }
  }

  // What arrived from an executor for a ready thread.
  void handle_signal(thread_slot& slot, const signal& s) {
    if (auto* r = std::get_if<tool_result>(&s); r && !slot.tools.finished(r->tool_call_id)) return;
    if (auto seen = observe(slot.conversation.state(), s, slot.running && slot.running->events))
      report(slot, std::move(*seen), s);
    run(slot, s);
    pump_tools(slot);
  }

  // Handles, in order, what waited while the thread was loading or committing,
  // until a step starts another commit. The handled ones are erased at the
  // end in one go: deltas pile up behind a commit, and erasing each from the
  // front would make the drain quadratic. (Not re-entered: loads and commits
  // answer by message.)
  void release_held(thread_slot& slot) {
    std::size_t handled = 0;
    while (slot.phase == slot_phase::ready && handled < slot.held.size()) {
      held_signal h = std::move(slot.held[handled++]);
      if (h.from_executor) {
        handle_signal(slot, h.s);
      } else {
        run(slot, h.s);
        pump_tools(slot);
      }
    }
    slot.held.erase(slot.held.begin(), slot.held.begin() + static_cast<std::ptrdiff_t>(handled));
  }

  // One step of the machine, committed (to the store, then the thread) before
  // any of its directives leaves. With a store that does I/O the commit runs
  // on a store thread and the step is taken when it answers (on_committed);
  // the thread's signals wait meanwhile, and the agent's other threads go on.
  // A store that cannot be written fails the running request with a typed
  // error; the thread in memory stays what the store holds.
  void run(thread_slot& slot, const signal& s) {
    if (slot.phase != slot_phase::ready) {
      slot.held.push_back({s, false});
      return;
    }
    if (const auto* delta = std::get_if<llm_delta>(&s)) return slot.conversation.absorb(*delta);
    react_thread::prepared_step step = slot.conversation.prepare(
        *st_.config, s, now_ms(), ids(), st_.system_prompt ? std::string_view(*st_.system_prompt) : std::string_view());
    if (!step.writes()) {
      take(slot, std::move(step));
      return;
    }
    if (stores().immediate()) {
      auto written = stores().append_now(*step.next, step.rev_before);
      if (written)
        take(slot, std::move(step));
      else
        fail_on_store(slot, written.error());
      return;
    }
    const std::uint64_t rev_before = step.rev_before;
    thread_view next = *step.next;
    slot.pending = std::make_unique<react_thread::prepared_step>(std::move(step));
    slot.phase = slot_phase::committing;
    const std::uint64_t no = ++slot.commit_no;
    // A commit renews the lease it is made under, at most once a second (or
    // per half lease, if shorter): the lease stays that little less than
    // lease_ttl ahead of every commit, and the commits in between leave the
    // store's lease row as it is instead of writing it each time.
    if (slot.lease) {
      const std::int64_t now = wall_clock_ms(), ttl = st_.ctx->lease_ttl.count();
      if (slot.lease->expires_at_ms - now <= ttl - std::min<std::int64_t>(1'000, ttl / 2))
        slot.lease->expires_at_ms = now + ttl;
    }
    stores().append(std::move(next), rev_before, slot.lease ? std::optional<thread_lease>(*slot.lease) : std::nullopt,
                    [self = handle(), thread_id = slot.conversation.history().id(), no](commit_outcome outcome) {
                      caf::anon_send(self, committed_atom::value, thread_id, no, std::move(outcome));
                    });
  }

  // A step whose entries are stored: its directives leave.
  void take(thread_slot& slot, react_thread::prepared_step&& step) {
    for (directive& d : slot.conversation.adopt(std::move(step))) dispatch(slot, std::move(d));
  }

  void fail_on_store(thread_slot& slot, const store_error& e) {
    const react_state& state = slot.conversation.state();
    const error_info why =
        error_info::of(store_error_type(e), "the thread could not be stored (" + e.type + "): " + e.message);
    // Whatever the request had in flight is stopped; its results would have nowhere to go.
    if (state.status == react_status::awaiting_llm) cancel_model_call(state.call_id);
    for (const auto& tool_call_id : slot.tools.running()) cancel_tool_call(state.call_id, tool_call_id);
    const std::string request_id = slot.asks.running();
    const int iterations = state.iteration;
    const token_usage used = state.request_usage;
    slot.conversation.abandon_request(why);
    // The store may hold more than memory does: a commit whose answer was
    // lost with the connection (or that timed out and landed after all), or
    // another writer's. Take what it holds, so that the next request does not
    // meet the same conflict; it waits for the reload.
    const std::string thread_id = slot.conversation.history().id();
    if (stores().immediate()) {
      if (auto held = stores().store().load(thread_id); held && held->rev() != slot.conversation.history().rev())
        slot.conversation = recovered(stores().store(), std::move(*held), ids(), now_ms());
    } else {
      reload(slot, thread_id);
    }
    if (!request_id.empty()) finish(slot, reply{request_id, why, used, iterations});
  }

  void reload(thread_slot& slot, const std::string& thread_id) {
    slot.phase = slot_phase::loading;
    // Taken again with the thread, under a new epoch; the old one is given up
    // (a no-op if it is no longer the thread's), so a failed reload leaves none behind.
    if (slot.lease) release(thread_id, *slot.lease);
    slot.lease.reset();
    load_async(thread_id);
  }

  void dispatch(thread_slot& slot, directive d) {
    const std::string& thread_id = slot.conversation.history().id();
    std::visit(
        overloaded{[&](llm_stream& x) {
                     slot.llm_started_us = steady_us();
                     if (slot.trace) trace_model_call(*slot.trace, x);
                     // Near the budget: a sign the policy or the conversation needs attention.
                     if (x.context.budget > 0 && x.context.estimated_tokens * 10 >= x.context.budget * 9)
                       st_.ctx->emit(telemetry_kind::context_warning, [&] {
                         return telemetry_event{telemetry_kind::context_warning,
                                                st_.id,
                                                thread_id,
                                                x.request_id,
                                                x.call_id,
                                                {},
                                                x.iteration,
                                                0,
                                                std::to_string(x.context.estimated_tokens) + " of " +
                                                    std::to_string(x.context.budget) + " tokens"};
                       });
                     st_.ctx->emit(telemetry_kind::llm_started, [&] {
                       return telemetry_event{telemetry_kind::llm_started,
                                              st_.id,
                                              thread_id,
                                              x.request_id,
                                              x.call_id,
                                              {},
                                              x.iteration,
                                              0,
                                              x.model};
                     });
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

  void call_model(const std::string& thread_id, std::shared_ptr<const llm_stream> x) {
    call_executor<llm_result>(
        st_.ctx->llm_executors, thread_id,
        [x](error_info e) {
          return llm_result{x->call_id, std::move(e)};
        },
        executor_retries, x, caf::actor_cast<agent_actor>(self_), thread_id, provider());
  }

  void run_tool(const std::string& thread_id, std::shared_ptr<const tool_exec> x) {
    call_executor<tool_result>(
        st_.ctx->tool_executors, thread_id,
        [x](error_info e) {
          return tool_result{x->call_id, x->tool_call_id, x->tool_name, std::move(e)};
        },
        executor_retries, x, thread_id, st_.id);
  }

  // A call goes to a live executor of the pool, and its answer comes back as
  // a signal for the thread, whichever executor ran it. A call that bounced
  // off an executor that had just died goes to its replacement; `lost` makes
  // the result of a call no executor could take.
  template <class Result, class Pool, class Lost, class... Args>
  void call_executor(Pool& pool, const std::string& thread_id, Lost lost, int retries, Args... args) {
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

  error_info executor_lost(const caf::error& e) {
    return error_info::of(error_type::executor_crashed,
                          "no executor could take the call: " + self_->system().render(e));
  }

  void cancel_model_call(const std::string& call_id) {
    self_->send(st_.ctx->llm_executors.pick(st_.executor_key), cancel_atom::value, call_id);
  }
  void cancel_tool_call(const std::string& call_id, const std::string& tool_call_id) {
    self_->send(st_.ctx->tool_executors.pick(st_.executor_key), cancel_atom::value, call_id, tool_call_id);
  }

  // Hands waiting tool calls to the executor, at most max_parallel_tools at once.
  void pump_tools(thread_slot& slot) {
    const std::string& thread_id = slot.conversation.history().id();
    for (tool_exec& x : slot.tools.ready(st_.profile->max_parallel_tools)) {
      if (slot.trace) trace_tool_call(*slot.trace, x);
      st_.ctx->emit(telemetry_kind::tool_started, [&] {
        return telemetry_event{telemetry_kind::tool_started,
                               st_.id,
                               thread_id,
                               x.request_id,
                               x.call_id,
                               x.tool_call_id,
                               x.iteration,
                               0,
                               x.tool_name};
      });
      if (slot.running && slot.running->events)
        self_->send(slot.running->events, event_atom::value,
                    stream_event{tool_started_event{x.request_id, x.tool_call_id, x.tool_name, x.arguments,
                                                    newest_entry_of(slot.conversation.history(), x.request_id)}});
      run_tool(thread_id, std::make_shared<const tool_exec>(std::move(x)));
    }
  }

  // A model call's span is a child of its request's; with spans recorded it
  // has an id of its own, else the call carries the caller's context on.
  void trace_model_call(request_trace& t, llm_stream& x) {
    t.model_span = t.record ? new_span_id(ids()) : t.request.span_id;
    t.first_chunk_us = -1;
    if (t.record) {
      t.model = x.model;
      if (st_.ctx->record_content) t.model_input = genai_input_messages(x.messages);
    }
    x.traceparent = format_traceparent(t.call(t.model_span));
  }

  void trace_tool_call(request_trace& t, tool_exec& x) {
    const std::uint64_t id = t.record ? new_span_id(ids()) : t.request.span_id;
    if (t.record) t.tools.push_back({x.tool_call_id, id, steady_us()});
    x.traceparent = format_traceparent(t.call(id));
  }

  // The span a model or tool result ends, described on its event.
  void describe_span(telemetry_event& e, const request_trace& t, const signal& s,
                     const std::optional<request_trace::tool_span>& tool) const {
    if (const auto* r = std::get_if<llm_result>(&s);
        r && (e.kind == telemetry_kind::llm_completed || e.kind == telemetry_kind::llm_error)) {
      e.span = t.call(t.model_span);
      e.model = t.model;
      e.provider = std::string(provider()->name());
      e.first_chunk_us = t.first_chunk_us;
      if (const auto* c = std::get_if<llm_completion>(&r->outcome)) {
        e.usage = c->usage;
        e.finish_reason = c->finish_reason;
        e.response_id = c->response_id;
        e.response_model = c->response_model;
        if (st_.ctx->record_content) {
          e.input_messages = t.model_input;
          e.output_messages = genai_output_messages(*c);
        }
      } else {
        e.error_type = std::get<error_info>(r->outcome).type;
      }
    } else if (const auto* r = std::get_if<tool_result>(&s); r && tool) {
      e.span = t.call(tool->span_id);
      e.duration_us = steady_us() - tool->started_us;
      if (!r->ok()) e.error_type = std::get<error_info>(r->outcome).type;
    } else {
      return;
    }
    e.parent_span_id = t.request.span_id;
    e.end_unix_ns = wall_clock_ns();
  }

  void report(thread_slot& slot, observation seen, const signal& s) {
    const react_state& state = slot.conversation.state();
    request_trace* trace = slot.trace && slot.trace->record ? slot.trace.get() : nullptr;
    if (trace && seen.kind == telemetry_kind::llm_delta && trace->first_chunk_us < 0)
      trace->first_chunk_us = steady_us() - slot.llm_started_us;
    if (trace && seen.kind == telemetry_kind::llm_error) ++trace->failed_calls;
    std::optional<request_trace::tool_span> tool;
    if (trace && (seen.kind == telemetry_kind::tool_completed || seen.kind == telemetry_kind::tool_error))
      tool = trace->end_tool(seen.tool_call_id);
    const std::int64_t took_us = seen.ends_model_call ? steady_us() - slot.llm_started_us : 0;
    st_.ctx->emit(seen.kind, [&] {
      telemetry_event e{seen.kind,
                        st_.id,
                        slot.conversation.history().id(),
                        state.request_id,
                        std::string(seen.call_id),
                        std::string(seen.tool_call_id),
                        seen.iteration,
                        took_us,
                        std::string(seen.detail)};
      if (trace)
        describe_span(e, *trace, s, tool);
      else if (seen.kind == telemetry_kind::llm_completed)
        e.usage = usage_of(s);  // cheap, and what metrics count tokens from
      return e;
    });
    if (seen.event && slot.running && slot.running->events) {
      const std::uint64_t seq = newest_entry_of(slot.conversation.history(), state.request_id);
      std::visit(
          overloaded{[&](delta_event& d) { d.thread_seq = seq; }, [&](tool_started_event& t) { t.thread_seq = seq; },
                     [&](tool_finished_event& t) { t.thread_seq = seq; }, [](request_finished_event&) {}},
          *seen.event);
      self_->send(slot.running->events, event_atom::value, std::move(*seen.event));
    }
  }

  static std::optional<token_usage> usage_of(const signal& s) {
    if (const auto* r = std::get_if<llm_result>(&s))
      if (const auto* c = std::get_if<llm_completion>(&r->outcome)) return c->usage;
    return std::nullopt;
  }

  void report(telemetry_kind kind, const std::string& thread_id, const std::string& request_id) {
    st_.ctx->emit(kind, [&] { return telemetry_event{kind, st_.id, thread_id, request_id, {}, {}, 0, 0, {}}; });
  }

  void finish(thread_slot& slot, reply r) {
    const std::string& thread_id = slot.conversation.history().id();
    if (slot.running && slot.asks.running() == r.request_id) {
      if (st_.stopping && !r.ok() && std::get<error_info>(r.outcome).type == error_type::cancelled)
        r.outcome = error_info::of(error_type::shutdown, "the agent stopped before the request finished");
      const telemetry_kind kind = r.ok() ? telemetry_kind::request_completed
                                  : std::get<error_info>(r.outcome).type == error_type::cancelled
                                      ? telemetry_kind::request_cancelled
                                      : telemetry_kind::request_failed;
      st_.ctx->emit(kind, [&] {
        telemetry_event e{kind,
                          st_.id,
                          thread_id,
                          r.request_id,
                          {},
                          {},
                          r.iterations,
                          steady_us() - slot.running->started_us,
                          r.ok()
                              ? std::string{}
                              : std::get<error_info>(r.outcome).type + ": " + std::get<error_info>(r.outcome).message};
        if (slot.trace && slot.trace->record) describe_request_span(e, *slot.trace, r);
        return e;
      });
      forget_request(r.request_id);
      slot.running->answer.deliver(std::move(r));
      slot.running.reset();
    }
    slot.asks.end();
    // A paused request's free calls still run, and their results still count.
    if (!slot.conversation.state().busy()) slot.tools.clear();
    slot.trace.reset();
    st_.threads.touch(thread_id, steady_ms());
    if (auto next = slot.asks.take_next()) start(slot, std::move(next->q), std::move(next->from));
  }

  void describe_request_span(telemetry_event& e, const request_trace& t, const reply& r) const {
    e.span = t.request;
    e.parent_span_id = t.parent_span;
    e.end_unix_ns = wall_clock_ns();
    e.provider = std::string(provider()->name());
    e.model = t.model;
    e.usage = r.usage;
    e.usage->calls_without_usage += t.failed_calls;
    if (!r.ok()) e.error_type = std::get<error_info>(r.outcome).type;
    if (st_.ctx->record_content) {
      e.input_messages = genai_text_message("user", t.question);
      if (r.ok()) e.output_messages = genai_text_message("assistant", std::get<std::string>(r.outcome));
    }
  }

  static std::int64_t steady_ms() { return steady_us() / 1000; }

  // The time entries and threads are stamped with.
  std::int64_t now_ms() { return st_.seeded ? st_.seeded->logical_ms++ : wall_clock_ms(); }

  // Where ids come from: a seeded agent's own source, otherwise the scheduler
  // thread's (ids need only be unique, and an agent runs on one thread at a time).
  random_ids& ids() {
    if (st_.seeded) return st_.seeded->ids;
    thread_local random_ids unseeded;
    return unseeded;
  }

  const std::shared_ptr<llm_provider>& provider() const {
    return st_.profile->provider ? st_.profile->provider : st_.ctx->provider;
  }

  agent_self self_;
  agent_state& st_;
};

// A handler's outcome as the default handler returns it.
template <class T>
caf::result<caf::message> as_message(caf::result<T> r) {
  switch (r.flag) {
    case caf::rt_value:
      return std::move(r.value);
    case caf::rt_error:
      return std::move(r.err);
    case caf::rt_delegated:
      return caf::delegated<caf::message>();
    default:
      return caf::skip;
  }
}

template <class T>
struct answer_of {
  using type = T;
};
template <class T>
struct answer_of<caf::result<T>> {
  using type = T;
};

template <class In, class Out, class Signatures>
struct declares;
template <class In, class Out, class... Signatures>
struct declares<In, Out, caf::detail::type_list<Signatures...>>
    : std::bool_constant<(std::is_same_v<Signatures, caf::typed_mpi<In, Out>> || ...)> {};

// The agent's handlers, one per message of agent_actor's interface.

caf::result<reply> handle_ask(agent_self self, query& q, event_sink_actor& events) {
  agent_logic l(self);
  auto answer = l.on_ask(std::move(q), std::move(events));
  l.unload_idle_threads();
  return answer;
}

void handle_signal(agent_self self, std::string& thread_id, signal& s) {
  agent_logic l(self);
  l.on_signal(thread_id, std::move(s));
  l.unload_idle_threads();
}

caf::result<reply> handle_decide(agent_self self, std::string& thread_id, decision& d) {
  agent_logic l(self);
  auto answer = l.on_decide(std::move(thread_id), std::move(d));
  l.unload_idle_threads();
  return answer;
}

void handle_cancel(agent_self self, std::string& request_id, std::string& reason) {
  repair_utf8(reason);  // the caller's words, committed with the cancel
  agent_logic(self).on_cancel(request_id, reason);
}

void handle_loaded(agent_self self, std::string& thread_id, loaded_thread& loaded, lease_held& lease) {
  agent_logic l(self);
  l.on_loaded(thread_id, loaded, lease);
  l.after_store_answer();
}

void handle_committed(agent_self self, std::string& thread_id, std::uint64_t& no, commit_outcome& outcome) {
  agent_logic l(self);
  l.on_committed(thread_id, no, outcome);
  l.after_store_answer();
}

void handle_viewed(agent_self self, std::uint64_t& no, std::string& thread_id, stored_thread& held) {
  agent_logic(self).on_viewed(no, thread_id, held);
}

caf::result<thread_view> handle_snapshot(agent_self self, std::string& thread_id) {
  return agent_logic(self).snapshot(thread_id);
}

agent_stats handle_stats(agent_self self) { return agent_logic(self).stats(); }

void handle_stop(agent_self self) {
  agent_logic l(self);
  if (l.stop())
    l.quit();
  else
    self->state.quit_when_settled = true;
}

// Calls `handle` with the elements after the atom if the message holds
// exactly (Atom, Args...), and drops it otherwise. What `handle` takes and
// answers must be a message of agent_actor's interface: checked as a typed
// behaviour's handlers are.
template <class Atom, class... Args, class Answer>
caf::result<caf::message> handle_as(Answer (*handle)(agent_self, Args&...), agent_self self, caf::message_view& view) {
  static_assert(declares<caf::detail::type_list<Atom, Args...>, caf::output_tuple<typename answer_of<Answer>::type>,
                         agent_actor::signatures>::value,
                "not a message of agent_actor's interface, or answered with another type");
  caf::type_erased_tuple& xs = view.content();
  if (!xs.match_elements<Atom, Args...>()) return caf::print_and_drop(self, view);
  return [&]<std::size_t... I>(std::index_sequence<I...>)->caf::result<caf::message> {
    if constexpr (std::is_void_v<Answer>) {
      handle(self, xs.get_mutable_as<Args>(I + 1)...);
      return caf::message();
    } else if constexpr (std::is_same_v<Answer, typename answer_of<Answer>::type>) {
      return caf::make_message(handle(self, xs.get_mutable_as<Args>(I + 1)...));
    } else {
      return as_message(handle(self, xs.get_mutable_as<Args>(I + 1)...));
    }
  }
  (std::index_sequence_for<Args...>{});
}

// Every message an agent is sent comes here, to CAF's default handler, the
// one place CAF hands a handler its actor. A behaviour's handlers find their
// actor only through a capture, which made each agent's behaviour an
// allocation of its own (nine handlers: 448 bytes, a tenth of an agent). The
// behaviour every agent holds is one shared object, and handles nothing an
// agent is sent.
caf::result<caf::message> agent_dispatch(caf::scheduled_actor* actor, caf::message_view& view) {
  // A typed behaviour would not compile without a handler for each message
  // of the interface; the switch below has no such check.
  static_assert(caf::detail::tl_size<agent_actor::signatures>::value == 10,
                "agent_actor's interface changed: give agent_dispatch a case for each of its messages");
  auto self = static_cast<agent_self>(actor);
  const caf::type_erased_tuple& xs = view.content();
  if (!xs.empty() && xs.match_element<caf::atom_value>(0)) {
    switch (static_cast<std::uint64_t>(xs.get_as<caf::atom_value>(0))) {
      case ask_atom::uint_value():
        return handle_as<ask_atom>(handle_ask, self, view);
      case signal_atom::uint_value():
        return handle_as<signal_atom>(handle_signal, self, view);
      case cancel_atom::uint_value():
        return handle_as<cancel_atom>(handle_cancel, self, view);
      case decide_atom::uint_value():
        return handle_as<decide_atom>(handle_decide, self, view);
      case loaded_atom::uint_value():
        return handle_as<loaded_atom>(handle_loaded, self, view);
      case committed_atom::uint_value():
        return handle_as<committed_atom>(handle_committed, self, view);
      case viewed_atom::uint_value():
        return handle_as<viewed_atom>(handle_viewed, self, view);
      case snapshot_atom::uint_value():
        return handle_as<snapshot_atom>(handle_snapshot, self, view);
      case stats_atom::uint_value():
        return handle_as<stats_atom>(handle_stats, self, view);
      case stop_atom::uint_value():
        return handle_as<stop_atom>(handle_stop, self, view);
    }
  }
  // Not of the interface: dropped with an error to the sender, as CAF does by default.
  return caf::print_and_drop(actor, view);
}

// A type no message is made of: a behaviour needs a handler to keep its
// actor alive, and this one is the same object for every agent.
struct never_sent {};

agent_actor::behavior_type agent_behavior(agent_self self, agent_launch launch, std::shared_ptr<runtime_context> ctx) {
  auto& st = self->state;
  st.id = std::move(launch.id);
  st.profile = std::move(launch.profile);
  st.ctx = std::move(ctx);
  st.config = std::move(launch.config);
  st.system_prompt = std::move(launch.system_prompt);
  st.executor_key = std::hash<std::string>{}(st.id);
  if (st.ctx->seed)
    st.seeded =
        std::make_unique<seeded_source>(seeded_source{random_ids(*st.ctx->seed ^ st.executor_key), seeded_epoch_ms});
  st.threads = thread_table<thread_slot>({st.profile->max_loaded_threads, st.profile->thread_idle_timeout});
  self->set_default_handler(agent_dispatch);
  static const caf::behavior shared{[](never_sent) {}};
  return {agent_actor::behavior_type::unsafe_init{}, shared};
}

}  // namespace

std::shared_ptr<const react_config> make_react_config(const agent_spec& spec, tool_set tools) {
  auto c = std::make_shared<react_config>();
  c->model = spec.model;
  c->tools = std::move(tools);
  c->max_iterations = spec.max_iterations;
  c->params = spec.params;
  c->tool_timeout_ms = spec.tool_timeout.count();
  c->context = spec.context;
  c->summary_model = spec.summary_model;
  if (!spec.approvals.empty())
    c->approvals = std::make_shared<const std::map<std::string, approval_rule, std::less<>>>(spec.approvals);
  return c;
}

agent_actor spawn_agent_actor(caf::actor_system& sys, const agent_launch& launch,
                              std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(agent_behavior, launch, std::move(ctx));
}

}  // namespace troupe
