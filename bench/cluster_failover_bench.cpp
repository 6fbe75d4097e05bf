// Failover time of a cluster of three nodes (actors/cluster/cluster_node.hpp)
// on one PostgreSQL: this process is a node, and so are two children of it
// (this program with --node). Each round kills the child that joined last
// with SIGKILL, then asks, through this process's node, an agent whose
// shard the victim held, and measures the time from the kill to the
// answer: the ask meets node_lost, is located again while the survivors
// declare the victim dead and take its shards, and is answered by the new
// holder. A new child then joins for the next round. Prints each round and
// the median, in milliseconds.
//
//   cluster_failover_bench CONNINFO [--rounds R] [--heartbeat-ms H] [--dead-after-ms D]
//   (the node's own mode: cluster_failover_bench --node CONNINFO ID H D)

#include "actors/cluster/cluster_node.hpp"
#include "bench_support.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int agents = 16;
const char* const secret = "cluster-failover-bench";

cluster_node_options options(const std::string& conninfo, const std::string& id, std::size_t heartbeat_ms,
                             std::size_t dead_after_ms) {
  cluster_node_options o;
  o.cluster.conninfo = conninfo;
  o.cluster.node_id = id;
  o.cluster.shards = 16;
  o.cluster.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  o.cluster.dead_after = std::chrono::milliseconds(dead_after_ms);
  o.cluster.shard_lease_ttl = std::chrono::milliseconds(dead_after_ms * 3 / 2);
  o.transport.secret = secret;
  o.runtime.provider =
      std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("answered"); });
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  for (int i = 0; i < agents; ++i) o.agents.push_back({.id = "agent-" + std::to_string(i), .model = "m"});
  return o;
}

// A node until its stdin closes (or it is killed).
int run_node(const std::string& conninfo, const std::string& id, std::size_t heartbeat_ms, std::size_t dead_after_ms) {
  cluster_node n(options(conninfo, id, heartbeat_ms, dead_after_ms));
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}

struct child {
  pid_t pid = -1;
  int in = -1;
};

child start(const std::string& conninfo, const std::string& id, std::size_t heartbeat_ms, std::size_t dead_after_ms) {
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) std::exit(1);
  child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(to[0], STDIN_FILENO);
    ::dup2(from[1], STDOUT_FILENO);
    const std::string h = std::to_string(heartbeat_ms), d = std::to_string(dead_after_ms);
    ::execl("/proc/self/exe", "cluster_failover_bench", "--node", conninfo.c_str(), id.c_str(), h.c_str(), d.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  char ready[16] = {};
  if (::read(from[0], ready, sizeof ready - 1) <= 0) {
    std::fprintf(stderr, "node %s did not start\n", id.c_str());
    std::exit(1);
  }
  ::close(from[0]);
  c.in = to[1];
  return c;
}

// Waits until this node and the two children share the shards (no shard
// free, each node some) and returns an agent whose shard `victim` holds.
std::string agent_held_by(cluster_node& n, const std::string& victim) {
  const auto until = clock_type::now() + std::chrono::seconds(60);
  for (;;) {
    if (clock_type::now() > until) {
      std::fprintf(stderr, "the shards were not shared in time\n");
      std::exit(1);
    }
    for (int i = 0; i < agents; ++i) {
      const std::string id = "agent-" + std::to_string(i);
      if (auto where = n.membership().locate(id); where && where->node_id == victim) return id;
    }
    n.membership().wait_rounds(1, std::chrono::seconds(5));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--node") == 0)
    return run_node(argv[2], argv[3], std::stoul(argv[4]), std::stoul(argv[5]));
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: cluster_failover_bench CONNINFO [--rounds R] [--heartbeat-ms H] [--dead-after-ms D]\n");
    return 2;
  }
  const std::string conninfo = argv[1];
  const std::size_t rounds = bench::flag(argc, argv, "--rounds", 5);
  const std::size_t heartbeat_ms = bench::flag(argc, argv, "--heartbeat-ms", 100);
  const std::size_t dead_after_ms = bench::flag(argc, argv, "--dead-after-ms", 1000);
  const std::string run = std::to_string(::getpid());
  cluster_node here(options(conninfo, "a-" + run, heartbeat_ms, dead_after_ms));
  child survivor = start(conninfo, "b-" + run, heartbeat_ms, dead_after_ms);
  std::vector<double> took;
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::string victim_id = "c-" + run + "-" + std::to_string(r);
    child victim = start(conninfo, victim_id, heartbeat_ms, dead_after_ms);
    const std::string agent = agent_held_by(here, victim_id);
    const auto killed = clock_type::now();
    ::kill(victim.pid, SIGKILL);
    auto reply = here.agent(agent)
                     .ask("after the kill", {.thread_id = "failover-" + std::to_string(r)})
                     .await(std::chrono::seconds(60));
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - killed).count();
    int status = 0;
    ::waitpid(victim.pid, &status, 0);
    ::close(victim.in);
    if (!reply || !reply->ok()) {
      std::fprintf(stderr, "round %zu: the ask on %s was not answered\n", r, agent.c_str());
      return 1;
    }
    std::printf("round %zu: %s answered %.0f ms after the kill\n", r, agent.c_str(), ms);
    took.push_back(ms);
  }
  std::printf("failover (heartbeat %zu ms, dead_after %zu ms, shard lease %zu ms): median %.0f ms over %zu rounds\n",
              heartbeat_ms, dead_after_ms, dead_after_ms * 3 / 2, bench::median(took), rounds);
  ::close(survivor.in);
  int status = 0;
  ::waitpid(survivor.pid, &status, 0);
  return 0;
}
