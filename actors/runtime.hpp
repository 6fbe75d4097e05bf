#pragma once
// The embedding API: everything a C++ program needs to run agents, without
// including CAF.
//
//   troupe::runtime rt({.provider = my_provider});
//   rt.tools().add(calculator_tool());
//   troupe::agent a = rt.spawn_agent({.id = "helper", .model = "m", .tools = {"calculator"}});
//   troupe::request r = a.ask("What is 2 + 2?");
//   if (auto reply = r.await(std::chrono::seconds(30))) ...
//   rt.shutdown();   // requests still running end with a "shutdown" error

#include "actors/agent_spec.hpp"
#include "actors/stream_event.hpp"
#include "directives/reply.hpp"
#include "runtime/mcp/server_config.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"
#include "runtime/telemetry/telemetry.hpp"
#include "runtime/tools/tool_registry.hpp"
#include "signals/decision.hpp"
#include "signals/query.hpp"
#include "thread/thread.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct runtime_options {
  std::shared_ptr<llm_provider> provider{};     // the default for agents that name none
  std::shared_ptr<thread_store> store{};        // null: an in-memory store
  std::shared_ptr<telemetry_sink> telemetry{};  // null: log_sink (TROUPE_LOG=debug for all events)
  std::size_t scheduler_threads = 0;            // 0: one per core
  std::size_t executors = 0;                    // model and tool executors each; 0: one per scheduler thread
  std::size_t tool_workers = 8;                 // threads for blocking tools
  std::size_t max_queued_tool_jobs = 10'000;
  // Store calls run off the actor scheduler: on this many threads for a
  // store that blocks (PostgreSQL), queued for one that batches (SQLite). A
  // call that cannot start within store_deadline fails with store_timeout.
  std::size_t store_threads = 16;
  std::chrono::milliseconds store_deadline{30'000};
  // One writer per thread across processes: with a store that does I/O, an
  // agent takes a thread's lease when it loads it, renews it with its
  // commits (at most once a second, so a lease is always within a second of
  // lease_ttl ahead of the last commit) and gives it up when it unloads it; another process asking on
  // that thread meanwhile gets thread_owned_elsewhere. owner_id names this
  // runtime to the store (empty: one is made up per runtime); a process
  // restarted with the same owner_id takes its threads back at once. A lease
  // not renewed within lease_ttl may be taken over.
  std::string owner_id{};
  std::chrono::milliseconds lease_ttl{60'000};
  // Set: how an agent takes a thread's lease, instead of the store's
  // acquire_lease (a cluster node takes it under the grant of the agent's
  // shard, so that a node that lost the shard cannot write; see
  // actors/cluster/cluster_node.hpp). Called on a store thread.
  std::function<stored<thread_lease>(const std::string& agent_id, const std::string& thread_id,
                                     const std::string& owner, std::int64_t now_ms, std::chrono::milliseconds ttl)>
      take_lease{};
  int max_restarts = 3;  // per agent within restart_window
  std::chrono::milliseconds restart_window{5'000};
  // Adds an OpenTelemetry exporter (OTLP/HTTP, JSON) beside `telemetry` when
  // OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
  // and OTEL_SDK_DISABLED is not true (runtime/telemetry/otlp_exporter.hpp).
  bool traces_from_environment = true;
  // Set: runs that repeat to the byte. Each agent draws its ids (entries,
  // model calls, spans) from a source seeded from this and its own id, and
  // stamps its entries and threads with a logical clock of its own (from
  // 2026-01-01T00:00:00Z, one millisecond per reading) instead of the wall
  // clock. Request ids the runtime makes up stay random: give them in
  // ask_options::request_id. Thread contents then depend only on what each
  // agent is asked, in which order, and on the model's and tools' answers.
  std::optional<std::uint64_t> seed{};
  // What shutdown() may spend delivering the spans the sinks still hold: a
  // collector that does not answer delays a program's end this long at most.
  std::chrono::milliseconds telemetry_flush_timeout{1'000};
};

struct ask_options {
  std::string thread_id{};   // empty: the agent's default thread
  std::string request_id{};  // empty: one is made up
  query_overrides overrides{};
  // Past this the request ends with deadline_exceeded and is cancelled;
  // unset: the agent spec's request_deadline.
  std::optional<std::chrono::milliseconds> deadline{};
  // Called for every stream event of the request, on a runtime thread; keep
  // it short. The last event is always a request_finished_event. A callback
  // that throws ends the request with callback_failed (reported as
  // telemetry callback.failed); the runtime carries on.
  std::function<void(const stream_event&)> on_event{};
  // Called once with the reply, on a runtime thread, without subscribing to
  // the stream: the cheap way to chain requests without blocking. A paused
  // request that request::cancel ends is the exception: called with the
  // paused reply, then with the cancelled one.
  std::function<void(const reply&)> on_reply{};
  // The caller's W3C trace context, a `traceparent` header's value: the
  // request's spans (and the model and tool calls it makes) join that trace.
  // Empty or malformed: the request starts a trace of its own.
  std::string traceparent{};
  // Set: the question is an observation a simulation's world delivered to
  // the agent, committed as the user's turn with this origin.
  std::optional<observation_origin> observation{};
  // For an ask sent to another node (remote_agent, cluster_agent): the
  // request goes on where it runs if this node is lost while it runs, and
  // commits its end to the thread for whoever reads it next (a server's
  // conversation turn). By default it is cancelled there, as nobody is left
  // to hear its reply. Asks within one runtime ignore it.
  bool outlives_caller = false;
  // The ask repeats one whose answer was lost (its process died, its
  // connection broke), under the same request_id. If the thread holds that
  // request already, its question is not committed again: a request that
  // ended is answered as it ended (without its token usage, which the
  // thread does not record), a paused one as paused, and one cut off before
  // its end (or ended `shutdown`: its agent stopped under it) goes on from
  // where its thread stands (docs/runtime.md). Without a request_id it
  // changes nothing: a made-up id is new.
  bool retry = false;
};

class runtime;

// A running request. Copies share the same request.
class request {
 public:
  const std::string& id() const;
  // The reply, or nullopt if it did not come within the timeout (the request
  // keeps running).
  std::optional<reply> await(std::chrono::milliseconds timeout) const;
  bool done() const;
  // The calls the request waits for decisions on, once it paused (its reply
  // is paused()); empty while it runs and once it ended.
  std::vector<open_approval> pending() const;
  // Ends the request with `cancelled`. A paused one too (its thread is
  // loaded if need be): the calls that wait are answered `cancelled`, and
  // this handle's reply becomes the request's end.
  void cancel(std::string reason = "cancelled by the caller") const;

  struct state;
  explicit request(std::shared_ptr<state> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<state> state_;
};

// A handle on an agent by id: it follows the agent across restarts.
class agent {
 public:
  const std::string& id() const { return id_; }
  request ask(std::string question, ask_options options = {}) const;
  // Decides a call a paused request waits for (on options.thread_id; the
  // request id and tool call id are the decision's; options' deadline,
  // on_reply and on_event apply). on_event follows the request the decision
  // continues, from the decision on, as an ask's subscriber would (the
  // calls' starts and ends, the model's deltas, a pause again), and its last
  // event is the request_finished_event of the handle's reply. The handle's
  // reply: the refusal when the decision cannot be taken (not_found,
  // already_decided, expired: nothing changed, though an expired pause took
  // its default), the request paused still when other calls wait, or else
  // the reply of the request it continued, when it pauses again or ends.
  // Sent again with the same idempotency key, a decision that was taken
  // commits nothing more and is answered as the first: with the request's
  // next pause or end, or with how its thread shows it ended.
  request decide(decision d, ask_options options = {}) const;
  // The thread as it is now (empty thread_id: the default thread); nullopt if
  // the agent is not running or did not answer in time.
  std::optional<thread_view> snapshot(const std::string& thread_id = {},
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Stops the agent for good (it is not restarted) and returns once it has
  // stopped. Its running and queued requests end with a "shutdown" error.
  bool stop() const;
  // Stops the agent for good once it runs nothing (its running and queued
  // requests ended, their commits landed), or after `patience` as stop()
  // does; returns at once, and `stopped` is called then, on a runtime
  // thread (false: there was no such agent, or the runtime shut down
  // first). Meanwhile it refuses asks and decisions with agent_stopped,
  // before committing anything of them: their callers may ask wherever the
  // agent runs next (a cluster node draining a shard).
  void drain(std::chrono::milliseconds patience, std::function<void(bool stopped)> stopped) const;
  bool running() const;

  struct impl_ref;
  agent(std::shared_ptr<impl_ref> rt, std::string id) : rt_(std::move(rt)), id_(std::move(id)) {}

 private:
  std::shared_ptr<impl_ref> rt_;
  std::string id_;
};

class runtime {
 public:
  explicit runtime(runtime_options options = {});
  ~runtime();  // shuts down if that was not done
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  tool_registry& tools();
  // Registers a tool that asks another agent: the tool's single "question"
  // argument becomes the other agent's query and its answer the result. No
  // thread waits for the answer (the tool is asynchronous), so nested agents
  // never starve the tool workers.
  void add_agent_tool(std::string tool_name, std::string agent_id, std::string description,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120));

  // Starts an MCP server (config.command, over stdio) or reaches one
  // (config.url, over Streamable HTTP) and registers each of its tools as
  // NAME__TOOL, an asynchronous tool agents enable by that name. Returns once
  // the tools are listed, or with the error (every step has a deadline).
  // The server is restarted if it dies and stopped by shutdown().
  mcp_server_status add_mcp_server(mcp_server_config config);

  // Starts an agent under the supervisor. Throws std::invalid_argument for an
  // unknown tool or an id already running.
  agent spawn_agent(agent_spec spec);
  // Starts many agents with one message to the supervisor (spawn_agent
  // waits for a round trip per agent), in the order given. All or none:
  // throws std::invalid_argument, and starts none, if one of them would not
  // start. Agents whose limits are the same share them, and so do agents
  // with the same tools their tool list.
  std::vector<agent> spawn_agents(std::vector<agent_spec> specs);
  std::optional<agent> find_agent(const std::string& id) const;
  std::vector<std::string> agent_ids() const;

  // Stops every agent (their requests end with a "shutdown" error) and the
  // actor system. Idempotent.
  void shutdown();

  // For tests and tools: the runtime's internals.
  struct impl;
  impl& internals() { return *impl_; }

 private:
  std::shared_ptr<agent::impl_ref> impl_ref_;
  std::shared_ptr<impl> impl_;
};

}  // namespace troupe
