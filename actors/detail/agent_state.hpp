#pragma once
// Private to the agent actor: its state, and `agent_logic`, the behaviour's
// logic as functions of the actor. The logic is defined in one unit per job,
// each named at the head of its block below:
//
//   agent_intake.cpp   asks, cancels, decisions and executors' signals
//                      arriving; each thread's request queue; a request's end
//   agent_threads.cpp  threads into and out of memory: loads, snapshots,
//                      leases, unloading idle threads, quitting
//   agent_commit.cpp   a step of the machine committed (to the store, then
//                      the thread) before its directives leave
//   agent_effects.cpp  directives to the executors, their results back as
//                      signals
//   agent_trace.cpp    a request's spans, telemetry and stream events
//   agent_actor.cpp    the messages handed to the logic, and the spawn

#include "actors/detail/agent_actor.hpp"
#include "actors/detail/agent_observe.hpp"
#include "actors/detail/promise_guard.hpp"
#include "actors/detail/request_queue.hpp"
#include "actors/detail/request_trace.hpp"
#include "actors/detail/thread_table.hpp"
#include "actors/detail/tool_parallelism.hpp"
#include "runtime/clock.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/detail/store_executor.hpp"
#include "strategy/recorded_request.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace troupe::detail {

inline reply refused(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

// The seq of the request's newest entry (stream_event.hpp's thread_seq). A
// running request's entries end the thread, but for a summary or two, so
// the walk back is short.
inline std::uint64_t newest_entry_of(const thread_view& t, std::string_view request_id) {
  const entry* e = newest_entry_of_request(t, request_id);
  return e ? e->seq : 0;
}

// What an ask is answered with when the agent dies before its end.
inline reply agent_crashed(const std::string& request_id) {
  return refused(request_id, error_type::agent_crashed, "the agent stopped before the request finished");
}

// Who waits for a request: the answer, and where its stream events go.
struct asker {
  promise_guard<reply> answer;
  event_sink_actor events;  // invalid: nobody subscribed
  std::int64_t started_us = 0;
  // Repeats (the same idempotency key) of the decision that continued the
  // request, which are answered as it is.
  std::vector<promise_guard<reply>> repeats{};

  void deliver(reply r) {
    for (promise_guard<reply>& p : repeats) p.deliver(r);
    answer.deliver(std::move(r));
  }
};

// A decide waiting for its step's answer (decision_answer).
struct waiting_decision {
  std::string thread_id;
  std::string request_id;
  std::string tool_call_id;
  std::string idempotency_key;
  promise_guard<reply> answer;
  event_sink_actor events;  // where the request it continues streams; invalid: nobody subscribed
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
  // Refusing asks and decisions; stops once it runs none (agent::drain).
  bool draining = false;
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

// The behaviour's logic, as functions of the actor: made for each message
// the agent handles, from the actor alone.
class agent_logic {
 public:
  explicit agent_logic(agent_self self) : self_(self), st_(self->state) {}

  std::string default_thread_id() const { return default_thread_of(st_.id); }

  // ---- Intake and queue (agent_intake.cpp) ----
 public:
  caf::result<reply> on_ask(query q, event_sink_actor events);
  caf::result<reply> on_decide(std::string thread_id, decision d, event_sink_actor events);
  caf::result<reply> on_cancel_ended(std::string thread_id, const std::string& request_id, const std::string& reason);
  void on_signal(const std::string& thread_id, signal s);
  void on_cancel(const std::string& request_id, const std::string& reason);
  agent_stats stats() const;
  bool stop();
  bool drained() const;

 private:
  void handle_signal(thread_slot& slot, const signal& s);
  void start(thread_slot& slot, query q, asker from);
  void finish(thread_slot& slot, reply r);
  void fail_every_ask(thread_slot& slot, const char* type, const std::string& message);
  void fail_queued_asks(thread_slot& slot, const char* type, const std::string& message);
  void fail_decisions(const std::string* thread_id, const char* type, const std::string& message);
  void pause(thread_slot& slot, awaiting_input x);
  void schedule_expiry(thread_slot& slot);
  static reply paused_reply(const std::string& request_id, token_usage usage, int iterations,
                            std::vector<open_approval> pending);
  static reply reply_of_ended(const thread_view& t, const std::string& request_id);
  void answer_decision(thread_slot& slot, decision_answer x);
  void run_again(thread_slot& slot, const std::string& request_id, asker from);
  std::string draining_refusal() const;

  // A request that ran or waited here is done with.
  template <class Key>
  void forget_request(const Key& request) {
    if (!st_.thread_of) return;
    st_.thread_of->erase(request);
    if (st_.thread_of->empty()) st_.thread_of.reset();
  }

  // ---- Thread load and lease (agent_threads.cpp) ----
 public:
  void on_loaded(const std::string& thread_id, loaded_thread& loaded, lease_held& lease);
  void on_viewed(std::uint64_t no, const std::string& thread_id, stored<thread>& held);
  caf::result<thread_view> snapshot(const std::string& requested);
  void quit();
  bool settled();
  void after_store_answer();
  void unload_idle_threads();
  void expire_stored_pauses();

 private:
  std::variant<thread_slot*, reply> slot_for(const std::string& thread_id, const std::string& request_id);
  thread_slot& begin_load(const std::string& thread_id);
  void load_async(const std::string& thread_id);
  void reload(thread_slot& slot, const std::string& thread_id);
  void release(const std::string& thread_id, const thread_lease& lease);
  void release_leases();
  static const char* store_error_type(const store_error& e);
  static std::string not_loaded(const std::string& thread_id, const store_error& e);

  // ---- The commit pipeline (agent_commit.cpp) ----
 public:
  void on_committed(const std::string& thread_id, std::uint64_t commit_no, commit_outcome& outcome);

 private:
  void run(thread_slot& slot, const signal& s);
  void take(thread_slot& slot, react_thread::prepared_step&& step);
  void release_held(thread_slot& slot);
  void fail_on_store(thread_slot& slot, const store_error& e);

  // ---- Effect dispatch (agent_effects.cpp) ----
 private:
  void dispatch(thread_slot& slot, directive d);
  void call_model(const std::string& thread_id, std::shared_ptr<const llm_stream> x);
  void run_tool(const std::string& thread_id, std::shared_ptr<const tool_exec> x);
  template <class Result, class Pool, class Lost, class... Args>
  void call_executor(Pool& pool, const std::string& thread_id, Lost lost, int retries, Args... args);
  error_info executor_lost(const caf::error& e);
  void cancel_model_call(const std::string& call_id);
  void cancel_tool_call(const std::string& call_id, const std::string& tool_call_id);
  void pump_tools(thread_slot& slot);
  void pass_down_to(thread_slot& slot, pass_down x);
  void decide_elsewhere(const std::string& thread_id, pass_down x, const std::function<void(tool_outcome)>& back);

  // ---- Tracing: spans, telemetry, stream events (agent_trace.cpp) ----
 private:
  void trace_request(thread_slot& slot, const query& q);
  void report_model_call(thread_slot& slot, llm_stream& x);
  void report_tool_call(thread_slot& slot, tool_exec& x);
  void trace_model_call(request_trace& t, llm_stream& x);
  void trace_tool_call(request_trace& t, tool_exec& x);
  void report(thread_slot& slot, observation seen, const signal& s);
  void report(telemetry_kind kind, const std::string& thread_id, const std::string& request_id);
  void report_request_end(thread_slot& slot, const reply& r);
  void report_approval_waits(thread_slot& slot, std::uint64_t from);
  void describe_span(telemetry_event& e, const request_trace& t, const signal& s,
                     const std::optional<request_trace::tool_span>& tool) const;
  void describe_request_span(telemetry_event& e, const request_trace& t, const reply& r) const;
  static std::optional<token_usage> usage_of(const signal& s);

  // ---- Shared by every unit ----
 private:
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

  store_executor& stores() { return *st_.ctx->stores; }
  agent_actor handle() const { return caf::actor_cast<agent_actor>(self_); }

  agent_self self_;
  agent_state& st_;
};

}  // namespace troupe::detail
