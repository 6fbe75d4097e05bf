#pragma once
// The actors' protocols, declared once: every message between troupe's actors
// with its answer, so that the compiler checks both ends. Requests are
// correlated by CAF (request(...).then(...) and response promises), never by
// hand-passed reply handles. All messages stay within one process, so
// troupe's value types travel as they are (CAF's "unsafe" local message
// types) instead of being serialised.

#include "actors/agent_spec.hpp"
#include "actors/detail/agent_launch.hpp"
#include "actors/runtime.hpp"
#include "actors/stream_event.hpp"
#include "directives/directive.hpp"
#include "runtime/llm/llm_provider.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"
#include "signals/signal.hpp"
#include "strategy/react_config.hpp"
#include "strategy/react_thread.hpp"
#include "thread/thread.hpp"

#include <caf/all.hpp>

#include <memory>
#include <vector>

namespace troupe {

using ask_atom = caf::atom_constant<caf::atom("ask")>;
using signal_atom = caf::atom_constant<caf::atom("signal")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using exec_atom = caf::atom_constant<caf::atom("exec")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using loaded_atom = caf::atom_constant<caf::atom("loaded")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using viewed_atom = caf::atom_constant<caf::atom("viewed")>;
using all_down_atom = caf::atom_constant<caf::atom("alldown")>;
using decide_atom = caf::atom_constant<caf::atom("decide")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;

// What a store thread answers an agent with: a thread loaded (and repaired),
// the outcome of a commit, a thread read for a snapshot.
using loaded_thread = stored<react_thread>;
using lease_held = std::optional<thread_lease>;  // none: a store without leases
using commit_outcome = stored<std::uint64_t>;
using stored_thread = stored<thread>;

// Where a request's stream events go: the broker that asked. An invalid
// handle means nobody subscribed.
using event_sink_actor = caf::typed_actor<caf::reacts_to<event_atom, stream_event>>;

// What an agent holds in memory, for tests and tools.
struct agent_stats {
  std::size_t loaded_threads = 0;    // loading ones too
  std::size_t running_requests = 0;  // running and queued
  std::size_t commits_in_flight = 0;
  std::size_t held_signals = 0;  // waiting for their thread's load or commit
  bool stopping = false;         // told to stop, waiting for the store
  bool draining = false;         // refusing asks until it runs none
};

// An agent. An ask is answered with the request's reply once it ends (the
// agent answers every ask it accepted: with the answer, a typed error, or
// agent_crashed if it dies first); stream events go to the sink meanwhile.
// Signals are the executors' deltas; a cancel names a request and a reason.
// A cancel with a thread id is for a request whose ask has ended (it paused):
// it is answered with the request's end, or not_found.
// loaded, committed and viewed are the store threads' answers (thread id,
// commit number, snapshot number) to the agent's own loads and commits.
// decide (thread id, decision, sink) is answered once the decision is
// refused, leaves its request still paused, or the request it continued
// pauses again or ends; the continued request's stream events go to the
// sink meanwhile, as an ask's do. drain: the agent refuses asks and
// decisions from now on, and stops (as on stop) once it runs none.
using agent_actor =
    caf::typed_actor<caf::replies_to<ask_atom, query, event_sink_actor>::with<reply>,
                     caf::reacts_to<signal_atom, std::string, signal>,
                     caf::replies_to<decide_atom, std::string, decision, event_sink_actor>::with<reply>,
                     caf::reacts_to<cancel_atom, std::string, std::string>,
                     caf::replies_to<cancel_atom, std::string, std::string, std::string>::with<reply>,
                     caf::replies_to<snapshot_atom, std::string>::with<thread_view>,
                     caf::replies_to<stats_atom>::with<agent_stats>, caf::reacts_to<stop_atom>,
                     caf::reacts_to<drain_atom>, caf::reacts_to<loaded_atom, std::string, loaded_thread, lease_held>,
                     caf::reacts_to<committed_atom, std::string, std::uint64_t, commit_outcome>,
                     caf::reacts_to<viewed_atom, std::uint64_t, std::string, stored_thread>>;

// Model calls. exec answers with the call's result once it ends (or
// executor_crashed); deltas go to the agent as signals while it streams.
// done carries a result from the provider's own thread back to the executor.
using llm_executor_actor =
    caf::typed_actor<caf::replies_to<exec_atom, std::shared_ptr<const llm_stream>, agent_actor, std::string,
                                     std::shared_ptr<llm_provider>>::with<llm_result>,
                     caf::reacts_to<cancel_atom, std::string>, caf::reacts_to<done_atom, llm_result>>;

// Tool calls. exec (tool call, thread id, agent id) answers with the tool's
// result: its outcome, a timeout, or executor_crashed. The other messages
// are the executor's own: a worker's or an asynchronous tool's outcome, a
// retry after backoff, a timeout.
using tool_executor_actor = caf::typed_actor<
    caf::replies_to<exec_atom, std::shared_ptr<const tool_exec>, std::string, std::string>::with<tool_result>,
    caf::reacts_to<cancel_atom, std::string, std::string>,
    caf::reacts_to<done_atom, std::string, int, tool_outcome, bool>, caf::reacts_to<retry_atom, std::string, int>,
    caf::reacts_to<timeout_atom, std::string>>;

// The facade's side of requests: it asks agents for the embedding program,
// runs its callbacks, routes cancels behind their asks and enforces
// deadlines (timeout: its own deadline timer). Also the event sink of the
// requests it asked. A cancel names the request's state, not only its id, so
// the handle of an ask refused as a duplicate cannot cancel the request
// whose id it reused.
using broker_actor =
    caf::typed_actor<caf::reacts_to<ask_atom, query, agent_actor, std::shared_ptr<request::state>>,
                     caf::reacts_to<decide_atom, std::string, decision, agent_actor, std::shared_ptr<request::state>>,
                     caf::reacts_to<cancel_atom, std::shared_ptr<request::state>, std::string>,
                     caf::reacts_to<event_atom, stream_event>, caf::reacts_to<timeout_atom>,
                     caf::replies_to<stats_atom>::with<std::size_t>, caf::replies_to<shutdown_atom>::with<bool>>;

// Starts and restarts agents (see supervisor.hpp). stop and drain (with
// its patience, past which the agent is stopped) answer once the agent is
// down, or false if there is none of that id.
using supervisor_actor =
    caf::typed_actor<caf::replies_to<spawn_atom, std::shared_ptr<const std::vector<agent_launch>>>::with<std::size_t>,
                     caf::replies_to<stop_atom, std::string>::with<bool>,
                     caf::replies_to<drain_atom, std::string, caf::timespan>::with<bool>,
                     caf::replies_to<shutdown_atom>::with<std::vector<agent_actor>>,
                     caf::replies_to<done_atom>::with<bool>, caf::reacts_to<all_down_atom>>;

}  // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::decision)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::signal)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::llm_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::tool_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::tool_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::thread_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::stream_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::agent_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::loaded_thread)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::lease_held)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::commit_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::stored_thread)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::llm_stream>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::tool_exec>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const std::vector<troupe::agent_launch>>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<troupe::llm_provider>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::react_config>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<troupe::request::state>)
