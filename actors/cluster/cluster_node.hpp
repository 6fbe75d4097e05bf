#pragma once
// A runtime as one node of a cluster (docs/cluster.md), without CAF or
// libpq: its store is the cluster's PostgreSQL database, it joins the
// membership (heartbeats, shards under leases with fencing epochs) and
// listens for the other nodes' asks.
//
//   troupe::cluster_node n({.cluster = {.conninfo = "postgres://…"},
//                           .transport = {.secret = s, .listen_port = 4100},
//                           .runtime = {.provider = model},
//                           .agents = specs});          // the same on every node
//   troupe::request r = n.agent("helper").ask("What is 2 + 2?");
//
// Every node is given the same agent specs; an agent runs only on the node
// that holds its shard: spawned when the shard is granted, stopped when it
// is drained or lost. Its thread leases are taken under the shard's grant
// (postgres_store::acquire_lease_in_shard), so a node that lost the shard
// cannot commit to its threads. An ask through any node reaches the holder:
// asked here when this node holds the shard, else sent to the holder. When
// the holder is lost (or answers that it no longer runs the agent) the ask
// is located again and retried with the same request id, unless the thread
// already holds entries of that request (then it ends with the error: asking
// again would commit the question twice). Decisions are routed the same
// way, and sent again whatever the thread holds (a decision sent again is
// answered as the first); snapshots read the cluster's store.

#include "actors/cluster/node.hpp"
#include "actors/runtime.hpp"
#include "runtime/cluster/cluster_options.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

class cluster_membership;
class cluster_node;
class postgres_store;

struct cluster_node_options {
  // The membership's options; `address` and `build_id` are set by the node
  // (its listen address, cluster_build_id()).
  cluster_options cluster;
  // The transport's; listen_port unset means any free port.
  node_options transport;
  // The runtime's; `store`, `owner_id` (the node id) and `take_lease` are
  // set by the node.
  runtime_options runtime;
  // The same on every node.
  std::vector<agent_spec> agents;
  // How long an ask may look for its agent's holder (its shard free, its
  // node lost) before it ends with the last error met.
  std::chrono::milliseconds route_timeout{30'000};
  // Called once, in the constructor, after the runtime and the transport
  // exist and before the node joins the membership (so before any agent is
  // spawned): add tools, MCP servers and agent tools here. An exception
  // from it ends the constructor (the node closes).
  std::function<void(cluster_node&)> prepare{};
  // Wraps the thread store the runtime uses (a commit timer, say); null:
  // the cluster's store as is. Leases, snapshots and the routing's checks
  // use the cluster's store itself.
  std::function<std::shared_ptr<thread_store>(std::shared_ptr<thread_store>)> wrap_threads{};
};

// What the node's routing has done, for its metrics (decisions count as asks).
struct cluster_route_counters {
  std::uint64_t local_asks = 0;
  std::uint64_t remote_asks = 0;  // sent to another node
  std::uint64_t retries = 0;      // asks located again after a lost or moved holder
};

// An agent of the cluster by id, wherever it runs. Copies share the node.
class cluster_agent {
 public:
  const std::string& id() const { return id_; }
  // As agent::ask (actors/runtime.hpp); options.deadline bounds each
  // attempt, the node's route_timeout the search for a holder.
  request ask(std::string question, ask_options options = {}) const;
  // As agent::decide, routed as ask is: to the shard's holder, located
  // again after node_lost or a moved shard. A decision without an
  // idempotency key is given one, so that one sent again after its holder
  // was lost is answered as the first (not as already_decided).
  request decide(decision d, ask_options options = {}) const;
  // The thread as committed, read from the cluster's store (which every
  // node shares), so wherever the agent runs; an empty thread for one never
  // committed. Nullopt when it cannot be read within the timeout, or the
  // agent is none of the cluster's. An empty thread_id: the agent's default
  // thread.
  std::optional<thread_view> snapshot(const std::string& thread_id = {},
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // The agent is one of the cluster's (every node has its spec) and a live
  // node holds its shard.
  bool running() const;

  struct impl;
  cluster_agent(std::shared_ptr<impl> n, std::string id) : node_(std::move(n)), id_(std::move(id)) {}

 private:
  std::shared_ptr<impl> node_;
  std::string id_;
};

class cluster_node {
 public:
  // Throws cluster_error (the membership's), std::invalid_argument or
  // std::runtime_error (the transport's), or the store's errors.
  explicit cluster_node(cluster_node_options options);
  // Stops at once, as halt() (unless it left), then the transport and the runtime.
  ~cluster_node();
  cluster_node(const cluster_node&) = delete;
  cluster_node& operator=(const cluster_node&) = delete;

  const std::string& id() const;
  node_address address() const;
  cluster_agent agent(std::string agent_id);

  // Leaves gracefully (cluster_membership::leave): drains every shard.
  bool leave(std::chrono::milliseconds timeout);

  runtime& local();
  cluster_membership& membership();
  // Membership counters are the membership's (membership().counters()).
  cluster_route_counters route_counters() const;

  // A tool in this node's runtime that asks agent_id wherever it runs, as
  // runtime::add_agent_tool does for a local agent: the "question" argument
  // is the agent's query, its answer the result, and its pauses for a
  // person are relayed (decisions taken on the calling agent's request are
  // passed down through cluster_agent::decide). Call it from `prepare`, so
  // that agents spawned with the tool find it.
  void add_agent_tool(std::string tool_name, std::string agent_id, std::string description,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120));
  // The cluster's PostgreSQL store (the same database serves conversations).
  std::shared_ptr<postgres_store> store() const;

 private:
  std::shared_ptr<cluster_agent::impl> impl_;
};

}  // namespace troupe
