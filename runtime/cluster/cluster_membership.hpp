#pragma once
// This node's part in a cluster kept in PostgreSQL (docs/cluster.md). On a
// thread of its own, every heartbeat interval, a round: the node's
// heartbeat; nodes whose heartbeat is older than dead_after declared dead;
// its shard leases renewed (a shard missing from the renewal was taken, and
// is reported lost); then its fair share of the shards. The share is
// computed from the live nodes sorted by id: shards/nodes each, the first
// shards%nodes of them one more. A node short of its share takes free
// shards, shards whose lease ran out and shards of dead nodes, each with a
// compare-and-set that bumps the shard's epoch and revokes, in the same
// transaction, every thread lease held under an older epoch of that shard;
// a node over its share drains its surplus (the drain hook) and gives it
// up once drained. No consensus beyond PostgreSQL's row locks.
//
// The hooks run on the membership's thread, one at a time, and must not
// block on the membership (a drain answers through its callback, from any
// thread). Independent of the actor runtime: the runtime wires its hooks
// to stopping and starting agents.

#include "runtime/cluster/cluster_options.hpp"
#include "runtime/cluster/cluster_status.hpp"
#include "runtime/cluster/shard_lease.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct cluster_hooks {
  // The node now holds the shard, with this epoch: it may load the shard's
  // agents (their thread leases through acquire_lease_in_shard).
  std::function<void(const shard_lease&)> acquired;
  // The node is to give the shard up: stop its agents, let their commits
  // land, and then call `drained` (from any thread); the shard is released
  // at the next round after. Unset: released at once.
  std::function<void(const shard_lease&, std::function<void()> drained)> drain;
  // The node no longer holds the shard (taken by another node, its lease
  // run out, this node declared dead): whatever still runs for it must not
  // write again. Its thread leases are revoked already, so its commits
  // would be refused as "fenced" anyway.
  std::function<void(const shard_lease&)> lost;
};

// What a node's membership has done since it joined, for its metrics.
struct cluster_counters {
  std::uint64_t rounds = 0;
  std::uint64_t failed_rounds = 0;  // a statement failed; its round stopped there
  std::uint64_t acquired = 0;       // shards granted to this node
  std::uint64_t released = 0;       // shards given up after a drain
  std::uint64_t lost = 0;           // shards taken, run out, or dropped on being declared dead
};

class cluster_membership {
 public:
  // Validates the options, connects, migrates the schema, makes the cluster
  // if no node has, registers this node ("joining") and starts its rounds.
  // Throws cluster_error: invalid_options, connect, shard_count (the
  // cluster has another count), node_id_taken (a live node has this id).
  explicit cluster_membership(cluster_options options, cluster_hooks hooks = {});
  // halt(), unless the node has left.
  ~cluster_membership();
  cluster_membership(const cluster_membership&) = delete;
  cluster_membership& operator=(const cluster_membership&) = delete;

  const std::string& node_id() const;
  // This process's incarnation of the node: a token of its own, written into
  // the node's row as it joins and named by its heartbeats, renewals and
  // grants, so that a process that joins later with the same node id (this
  // one was paused or cut off past dead_after) fences it.
  const std::string& incarnation() const;
  std::uint32_t shard_count() const;
  std::uint32_t shard_of(std::string_view agent_id) const;

  // Where the agent's shard is held: from the last round's reading, else
  // read at once (and kept until a later round sees the shard move, this
  // node releases it, or forget()); always read at once once the rounds
  // stopped (the node left). None while the shard is free or its holder's
  // lease has run out.
  std::optional<shard_location> locate(std::string_view agent_id);
  // A location found wrong (the node said it does not hold the shard, or is
  // gone): read it again next time.
  void forget(std::uint32_t shard);

  // The shards this node holds, draining ones included, by shard number.
  std::vector<shard_lease> shards_held() const;
  // Every node the table holds, as the database sees it now.
  std::vector<node_info> nodes();

  // Leaves gracefully: the node says it is leaving (the others stop
  // counting it), drains and gives up every shard, then its row is
  // deleted and its rounds stop. False if shards were still held after
  // `timeout` (their leases then run out, as after a crash).
  bool leave(std::chrono::milliseconds timeout);
  // Stops the rounds at once, giving nothing up, as a killed process does:
  // the others declare the node dead after dead_after.
  void halt();

  // Rounds run so far, and a wait for `more` rounds after the current one
  // (false after `timeout`, or when the rounds stopped).
  std::uint64_t rounds() const;
  bool wait_rounds(std::uint64_t more, std::chrono::milliseconds timeout);
  cluster_counters counters() const;
  // Another process joined with this node's id while this one was silent
  // past dead_after: at its next heartbeat this one reported every shard
  // lost, gave up what the table still said it held, and stopped its rounds
  // (it cannot join again while that process lives).
  bool superseded() const;
  // The last round's failure (a statement that failed), if it failed.
  std::optional<std::string> last_error() const;

 private:
  struct state;
  std::shared_ptr<state> s_;  // shared with the drain callbacks it hands out
};

}  // namespace troupe
