// Handover time of a shard when a node leaves gracefully
// (cluster_node::leave, actors/cluster/cluster_node.hpp), on one PostgreSQL.
// Three cluster_nodes in this process (each its own CAF system, transport
// and membership): a and b stay, and each round a third, c, joins, waits
// until the three share the shards, has a conversation on an agent of one
// of its shards asked once through a, and leaves. From the leave on, the
// same conversation is asked through a, one ask after another, until an ask
// is answered by another node than c (each node's scripted model names its
// node in the answer). Meanwhile a watcher reads every millisecond which
// shards each node holds, to time each of c's shards: leave → released by c
// (drained and given up), released → acquired by a or b. The leave comes
// at a seeded random point of the others' heartbeat intervals.
//
// Prints each round and the medians over the rounds, in milliseconds. The
// figures follow whatever the drain does: they are those of the tree the
// program is built from.
//
//   cluster_handover_bench CONNINFO [--rounds R] [--heartbeat-ms H] [--dead-after-ms D]

#include "bench_support.hpp"
#include "cluster_bench_nodes.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t agents = 64;

double ms_since(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::shared_ptr<llm_provider> naming(const std::string& node_id) {
  return std::make_shared<scripted_provider>(
      [node_id](const llm_stream&) { return scripted_reply::text("answered by " + node_id); });
}

// When each shard the leaver held was released by it and acquired by
// another node, as read every millisecond.
class shard_watch {
 public:
  shard_watch(cluster_node& leaver, std::vector<cluster_node*> others, clock_type::time_point origin)
      : leaver_(leaver), others_(std::move(others)), origin_(origin) {
    for (const shard_lease& l : leaver_.membership().shards_held()) shards_[l.shard] = {};
    thread_ = std::thread([this] { run(); });
  }
  ~shard_watch() { stop(); }

  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

  struct times {
    std::optional<double> released, acquired;  // ms after the origin
  };
  std::map<std::uint32_t, times> shards() const {
    std::lock_guard lock(mutex_);
    return shards_;
  }
  bool all_moved() const {
    std::lock_guard lock(mutex_);
    for (const auto& [shard, t] : shards_)
      if (!t.released || !t.acquired) return false;
    return true;
  }

 private:
  void run() {
    while (!done_) {
      std::map<std::uint32_t, bool> held_by_leaver;
      for (const shard_lease& l : leaver_.membership().shards_held()) held_by_leaver[l.shard] = true;
      std::map<std::uint32_t, bool> held_by_others;
      for (cluster_node* n : others_)
        for (const shard_lease& l : n->membership().shards_held()) held_by_others[l.shard] = true;
      const double now = ms_since(origin_, clock_type::now());
      bool all = true;
      {
        std::lock_guard lock(mutex_);
        for (auto& [shard, t] : shards_) {
          if (!t.released && !held_by_leaver.count(shard)) t.released = now;
          if (!t.acquired && held_by_others.count(shard)) t.acquired = now;
          all = all && t.released && t.acquired;
        }
      }
      if (all) return;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }

  cluster_node& leaver_;
  std::vector<cluster_node*> others_;
  clock_type::time_point origin_;
  mutable std::mutex mutex_;
  std::map<std::uint32_t, times> shards_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct round_figures {
  double first_answer_elsewhere = 0;  // leave → an ask answered by a or b
  double longest_ask = 0;             // the longest single ask from the leave on
  std::size_t answered_by_leaver = 0, failed = 0;
  double release_median = 0, acquire_after_release_median = 0, all_acquired = 0;
  double leave_returned = 0;
  bool left = false;
  std::uint64_t released_count = 0, acquired_count = 0;
  std::size_t shards_moved = 0;
  std::string first_failure;  // its error's type and message
};

std::string agent_held_by(cluster_node& n, const std::string& holder) {
  for (std::size_t i = 0; i < agents; ++i)
    if (auto where = n.membership().locate(bench::agent_name(i)); where && where->node_id == holder)
      return bench::agent_name(i);
  std::fprintf(stderr, "no agent on node %s\n", holder.c_str());
  std::exit(1);
}

round_figures one_round(const std::string& conninfo, const bench::cluster_timings& t, cluster_node& a, cluster_node& b,
                        const std::string& leaver_id, std::size_t round) {
  auto c =
      std::make_unique<cluster_node>(bench::cluster_bench_options(conninfo, leaver_id, t, agents, naming(leaver_id)));
  bench::wait_until_shared({&a, &b, c.get()}, t.shards);
  a.membership().wait_rounds(1, std::chrono::seconds(5));  // the shares as a locates them
  const std::string agent = agent_held_by(a, leaver_id);
  const std::string thread = "handover-" + std::to_string(::getpid()) + "-" + std::to_string(round);
  auto first = a.agent(agent).ask("before the leave", {.thread_id = thread}).await(std::chrono::seconds(30));
  if (!first || !first->ok() || std::get<std::string>(first->outcome) != "answered by " + leaver_id) {
    std::fprintf(stderr, "round %zu: the first ask was not answered by the leaver\n", round);
    std::exit(1);
  }
  const auto acquired_before = a.membership().counters().acquired + b.membership().counters().acquired;
  // The wait for the shares ended just after a round of a: leaving then
  // would always find the others' next round a whole interval away. A
  // leave comes at any point of their intervals.
  std::mt19937 random(static_cast<std::uint32_t>(round));
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::uniform_int_distribution<std::size_t>(0, t.heartbeat_ms - 1)(random)));

  round_figures f;
  const auto origin = clock_type::now();
  shard_watch watch(*c, {&a, &b}, origin);
  f.shards_moved = watch.shards().size();
  auto leaving = std::async(std::launch::async, [&] {
    const bool ok = c->leave(std::chrono::seconds(60));
    return std::make_pair(ok, ms_since(origin, clock_type::now()));
  });
  for (std::size_t k = 0;; ++k) {
    const auto sent = clock_type::now();
    auto r = a.agent(agent)
                 .ask("after the leave " + std::to_string(k), {.thread_id = thread})
                 .await(std::chrono::seconds(60));
    const auto back = clock_type::now();
    f.longest_ask = std::max(f.longest_ask, ms_since(sent, back));
    if (!r || !r->ok()) {
      ++f.failed;
      if (r && f.first_failure.empty())
        f.first_failure = std::get<error_info>(r->outcome).type + ": " + std::get<error_info>(r->outcome).message;
      if (f.failed > 100) {
        std::fprintf(stderr, "round %zu: asks keep failing: %s\n", round,
                     r ? std::get<error_info>(r->outcome).message.c_str() : "no reply");
        std::exit(1);
      }
      continue;
    }
    if (std::get<std::string>(r->outcome) == "answered by " + leaver_id) {
      ++f.answered_by_leaver;
      continue;
    }
    f.first_answer_elsewhere = ms_since(origin, back);
    break;
  }
  std::tie(f.left, f.leave_returned) = leaving.get();
  // Every shard given up and taken, or the watch waits no more than this.
  const auto until = clock_type::now() + std::chrono::seconds(30);
  while (!watch.all_moved() && clock_type::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  watch.stop();
  f.released_count = c->membership().counters().released;
  c.reset();
  std::vector<double> released, after_release, acquired;
  for (const auto& [shard, times] : watch.shards()) {
    if (!times.released || !times.acquired) {
      std::fprintf(stderr, "round %zu: shard %u did not move\n", round, shard);
      std::exit(1);
    }
    released.push_back(*times.released);
    after_release.push_back(*times.acquired - *times.released);
    acquired.push_back(*times.acquired);
  }
  f.release_median = bench::median(released);
  f.acquire_after_release_median = bench::median(after_release);
  f.all_acquired = *std::max_element(acquired.begin(), acquired.end());
  f.acquired_count = a.membership().counters().acquired + b.membership().counters().acquired - acquired_before;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: cluster_handover_bench CONNINFO [--rounds R] [--heartbeat-ms H] [--dead-after-ms D]\n");
    return 2;
  }
  const std::string conninfo = argv[1];
  const std::size_t rounds = bench::flag(argc, argv, "--rounds", 5);
  bench::cluster_timings t;
  t.heartbeat_ms = bench::flag(argc, argv, "--heartbeat-ms", t.heartbeat_ms);
  t.dead_after_ms = bench::flag(argc, argv, "--dead-after-ms", t.dead_after_ms);
  const std::string run = std::to_string(::getpid());
  cluster_node a(bench::cluster_bench_options(conninfo, "a-" + run, t, agents, naming("a-" + run)));
  cluster_node b(bench::cluster_bench_options(conninfo, "b-" + run, t, agents, naming("b-" + run)));

  std::vector<double> first, longest, release, after_release, all_acquired, leave_returned, by_leaver, failed;
  std::printf("3 nodes, %u shards, %zu agents; heartbeat %zu ms, dead_after %zu ms; milliseconds after the leave\n",
              t.shards, agents, t.heartbeat_ms, t.dead_after_ms);
  for (std::size_t r = 0; r < rounds; ++r) {
    const round_figures f = one_round(conninfo, t, a, b, "c-" + run + "-" + std::to_string(r), r);
    std::printf(
        "round %zu: %zu shards moved (released %llu, acquired %llu); answered elsewhere %.0f, longest ask %.0f, "
        "%zu asks answered by the leaver, %zu failed; per shard: released %.0f, acquired %.0f after its release; "
        "all acquired %.0f; leave() returned %s at %.0f\n",
        r, f.shards_moved, static_cast<unsigned long long>(f.released_count),
        static_cast<unsigned long long>(f.acquired_count), f.first_answer_elsewhere, f.longest_ask,
        f.answered_by_leaver, f.failed, f.release_median, f.acquire_after_release_median, f.all_acquired,
        f.left ? "true" : "false", f.leave_returned);
    if (!f.first_failure.empty()) std::printf("  round %zu, the first failed ask: %s\n", r, f.first_failure.c_str());
    first.push_back(f.first_answer_elsewhere);
    longest.push_back(f.longest_ask);
    release.push_back(f.release_median);
    after_release.push_back(f.acquire_after_release_median);
    all_acquired.push_back(f.all_acquired);
    leave_returned.push_back(f.leave_returned);
    by_leaver.push_back(static_cast<double>(f.answered_by_leaver));
    failed.push_back(static_cast<double>(f.failed));
  }
  std::printf(
      "medians over %zu rounds: leave -> ask answered by the new holder %.0f ms; longest ask %.0f ms; "
      "per shard: leave -> released %.0f ms, released -> acquired %.0f ms; leave -> every shard acquired %.0f ms; "
      "leave() took %.0f ms; asks answered by the leaver %.0f, failed %.0f\n",
      rounds, bench::median(first), bench::median(longest), bench::median(release), bench::median(after_release),
      bench::median(all_acquired), bench::median(leave_returned), bench::median(by_leaver), bench::median(failed));
  a.leave(std::chrono::seconds(10));
  b.leave(std::chrono::seconds(10));
  return 0;
}
