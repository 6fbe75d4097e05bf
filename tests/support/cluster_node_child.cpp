// The node the cluster kill test kills: it joins the cluster, waits until
// it holds the shard of agent "agent-1", takes that thread's lease under the
// shard and prints "ready SHARD_EPOCH LEASE_EPOCH"; then it commits a note
// to the thread again and again, printing "committed N" (the thread's size)
// after each, until it is killed or a commit is refused.
//
// With "watch" it commits nothing: it prints "incarnation TOKEN" once it has
// joined, then "held S:E S:E …" (shard:epoch, by shard) each time the shards
// it holds change, and "superseded" before it exits, once another process
// joined with its node id and replaced it.
//
//   troupe_cluster_node_child CONNINFO NODE_ID [watch]

#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "support/cluster_nodes.hpp"
#include "thread/id_source.hpp"

#include <cstdio>
#include <string>
#include <thread>

using namespace troupe;
using namespace std::chrono_literals;

namespace {

class counting_ids final : public id_source {
 public:
  std::string next(std::string_view kind) override { return std::string(kind) + "_" + std::to_string(++n_); }

 private:
  std::uint64_t n_ = 0;
};

int watch(cluster_membership& node) {
  std::printf("incarnation %s\n", node.incarnation().c_str());
  std::fflush(stdout);
  std::string last = "-";
  for (;;) {
    node.wait_rounds(1, 1s);
    std::string now = "held";
    for (const shard_lease& l : node.shards_held())
      now += " " + std::to_string(l.shard) + ":" + std::to_string(l.epoch);
    if (now != last) std::printf("%s\n", now.c_str());
    last = now;
    if (node.superseded()) {
      std::printf("superseded\n");
      return 0;
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[3]) == "watch")) return 2;
  const cluster_options o = testing::test_node(argv[1], argv[2]);
  cluster_membership node(o);
  if (argc == 4) return watch(node);
  postgres_store store(argv[1]);
  const std::string agent = "agent-1";
  const std::uint32_t shard = node.shard_of(agent);
  std::optional<shard_lease> held;
  while (!held) {
    for (const shard_lease& l : node.shards_held())
      if (l.shard == shard) held = l;
    if (!held) node.wait_rounds(1, 10s);
  }
  const auto lease = store.acquire_lease_in_shard(agent, o.node_id, *held, wall_clock_ms(), 1h);
  if (!lease) return 3;
  std::printf("ready %llu %llu\n", static_cast<unsigned long long>(held->epoch),
              static_cast<unsigned long long>(lease->epoch));
  std::fflush(stdout);
  counting_ids ids;
  thread t(agent, wall_clock_ms());
  for (int n = 1;; ++n) {
    const std::uint64_t rev = t.rev();
    t.append(entry_draft{"note", {{"n", n}}, {}}, wall_clock_ms(), ids);
    if (!store.append_fenced(t, rev, *lease)) return 4;
    std::printf("committed %zu\n", t.size());
    std::fflush(stdout);
  }
}
