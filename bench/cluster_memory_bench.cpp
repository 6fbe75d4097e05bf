// The memory a cluster node keeps for the asks it has routed. Two
// cluster_nodes (actors/cluster/cluster_node.hpp) run in this process on one
// PostgreSQL, with a scripted model that answers at once; N asks enter
// through node a, at most W in flight, to agents of both nodes. The resident
// memory is read before the first ask and after 25 %, 50 % and 100 % of them,
// each time with no ask in flight and the freed pages given back to the
// system (malloc_trim, and jemalloc's purge when it is the allocator), so
// that what is read is what the nodes still hold. An ask that has ended
// should leave nothing behind but its thread's entries in the store, so the
// growth per ask from 50 % to 100 % (after the warm-up, the pools and the
// caches have settled) is the figure to read: near zero is flat, a steady
// amount a leak.
//
// Each thread gets T asks (N/T threads in all, W of them in use at a time),
// and an agent keeps only K threads loaded (agent_spec.max_loaded_threads):
// with the default 10,000 the loaded threads would grow with N as well, and
// hide what the routing keeps. --crossing picks the agents: 0 only those
// node a runs (no ask crosses), 1 all of them (about half cross), 2 only
// those node b runs (every ask crosses the transport). --unrouted (with
// --crossing 0) asks node a's runtime itself, past the routing: the
// baseline, what the runtime alone keeps an ask.
//
//   cluster_memory_bench CONNINFO [--asks N] [--in-flight W] [--loaded-threads K]
//                        [--asks-per-thread T] [--crossing 0|1|2] [--unrouted]

#include "apps/simulation.hpp"
#include "bench_support.hpp"
#include "cluster_bench_nodes.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

using namespace troupe;

namespace {

struct settings {
  std::string conninfo;
  std::size_t asks = 100'000;
  std::size_t in_flight = 64;
  std::size_t loaded_threads = 4;
  std::size_t asks_per_thread = 16;
  std::size_t crossing = 1;
  bool unrouted = false;
};

// Pages freed but kept by the allocator are not what the nodes hold.
void give_back_freed_pages() {
  malloc_trim(0);
  // jemalloc (troupe's executables link it) keeps its own; looked up at run
  // time so that the program also builds and runs without it.
  using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  static const auto mallctl = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl) mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: every arena
}

// Asks kept going at most `limit` at a time; the replies are counted.
class bounded_asks {
 public:
  explicit bounded_asks(std::size_t limit) : limit_(limit) {}

  // `to`: a cluster_agent (routed) or an agent (its runtime asked directly).
  template <class agent_handle>
  void send(const agent_handle& to, std::string thread_id) {
    std::unique_lock lock(m_);
    changed_.wait(lock, [&] { return in_flight_ < limit_; });
    ++in_flight_;
    lock.unlock();
    ask_options o;
    o.thread_id = std::move(thread_id);
    o.on_reply = [this](const reply& r) {
      std::lock_guard lock(m_);
      --in_flight_;
      failed_ += !r.ok();
      changed_.notify_all();
    };
    to.ask("What now?", std::move(o));
  }
  // Waits until no ask is in flight; false when one is still after `timeout`.
  bool drain(std::chrono::seconds timeout) {
    std::unique_lock lock(m_);
    return changed_.wait_for(lock, timeout, [&] { return in_flight_ == 0; });
  }
  std::size_t failed() {
    std::lock_guard lock(m_);
    return failed_;
  }

 private:
  const std::size_t limit_;
  std::mutex m_;
  std::condition_variable changed_;
  std::size_t in_flight_ = 0;
  std::size_t failed_ = 0;
};

double megabytes(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: cluster_memory_bench CONNINFO [--asks N] [--in-flight W] [--loaded-threads K] "
                 "[--asks-per-thread T] [--crossing 0|1|2] [--unrouted]\n");
    return 2;
  }
  settings s;
  s.conninfo = argv[1];
  s.asks = bench::flag(argc, argv, "--asks", s.asks);
  s.in_flight = bench::flag(argc, argv, "--in-flight", s.in_flight);
  s.loaded_threads = bench::flag(argc, argv, "--loaded-threads", s.loaded_threads);
  s.asks_per_thread = std::max<std::size_t>(1, bench::flag(argc, argv, "--asks-per-thread", s.asks_per_thread));
  s.crossing = bench::flag(argc, argv, "--crossing", s.crossing);
  for (int i = 1; i < argc; ++i) s.unrouted = s.unrouted || std::strcmp(argv[i], "--unrouted") == 0;
  if (s.crossing > 2 || s.in_flight == 0 || (s.unrouted && s.crossing != 0)) {
    std::fprintf(stderr, "--crossing is 0, 1 or 2 (0 with --unrouted), --in-flight at least 1\n");
    return 2;
  }

  // Ids of this run only: no node or thread of an earlier run is in the way.
  const std::string run = "mem-" + std::to_string(::getpid());
  const bench::cluster_timings timings;
  const std::size_t agent_count = 64;
  auto options_for = [&](const char* name) {
    cluster_node_options o = bench::cluster_bench_options(
        s.conninfo, run + "-" + name, timings, agent_count,
        std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("Sure."); }));
    for (agent_spec& a : o.agents) a.max_loaded_threads = s.loaded_threads;
    return o;
  };
  cluster_node a(options_for("a")), b(options_for("b"));
  bench::wait_until_shared({&a, &b}, timings.shards);
  for (cluster_node* n : {&a, &b}) n->membership().wait_rounds(1, std::chrono::seconds(5));

  std::vector<cluster_agent> agents;
  std::vector<agent> unrouted;  // the same agents, held by node a's runtime
  for (std::size_t i = 0; i < agent_count; ++i) {
    const auto where = a.membership().locate(bench::agent_name(i));
    const bool on_a = where && where->node_id == a.id();
    if (s.crossing != 1 && on_a != (s.crossing == 0)) continue;
    agents.push_back(a.agent(bench::agent_name(i)));
    if (!s.unrouted) continue;
    const std::optional<agent> local = a.local().find_agent(bench::agent_name(i));
    if (!local) {
      std::fprintf(stderr, "node a holds %s's shard but does not run it\n", bench::agent_name(i).c_str());
      return 1;
    }
    unrouted.push_back(*local);
  }
  if (agents.empty()) {
    std::fprintf(stderr, "no agent runs where --crossing %zu wants one\n", s.crossing);
    return 1;
  }
  std::printf(
      "%zu asks through node a, %zu in flight, to %zu of %zu agents (--crossing %zu%s), "
      "%zu asks a thread, %zu threads loaded an agent\n",
      s.asks, s.in_flight, agents.size(), agent_count, s.crossing, s.unrouted ? ", unrouted" : "", s.asks_per_thread,
      s.loaded_threads);

  bounded_asks asks(s.in_flight);
  std::size_t sent = 0;
  std::size_t sent_at_half = 0, rss_at_half = 0, heap_at_half = 0;
  for (const double share : {0.0, 0.25, 0.5, 1.0}) {
    const auto until = static_cast<std::size_t>(share * static_cast<double>(s.asks));
    for (; sent < until; ++sent) {
      // W threads in use at a time, each given its T asks before the next W start.
      const std::size_t round = sent / (s.in_flight * s.asks_per_thread);
      const std::size_t thread = round * s.in_flight + sent % s.in_flight;
      const std::string thread_id = run + "-" + std::to_string(thread);
      if (s.unrouted)
        asks.send(unrouted[thread % unrouted.size()], thread_id);
      else
        asks.send(agents[thread % agents.size()], thread_id);
    }
    if (!asks.drain(std::chrono::seconds(300))) {
      std::fprintf(stderr, "asks were still in flight after 5 minutes\n");
      return 1;
    }
    give_back_freed_pages();
    const std::size_t rss = current_rss_bytes();
    const std::optional<heap_usage> heap = current_heap_usage();
    std::printf("asks %8zu  VmRSS %8.1f MB", sent, megabytes(rss));
    if (heap) std::printf("  allocated %8.1f MB", megabytes(heap->allocated));
    std::printf("\n");
    std::fflush(stdout);
    if (share == 0.5) {
      sent_at_half = sent;
      rss_at_half = rss;
      heap_at_half = heap ? heap->allocated : 0;
    } else if (share == 1.0) {
      const auto between = static_cast<double>(sent - sent_at_half);
      std::printf("growth from 50%% to 100%%: %.0f bytes an ask (VmRSS)",
                  (static_cast<double>(rss) - rss_at_half) / between);
      if (heap)
        std::printf(", %.0f bytes an ask (allocated)", (static_cast<double>(heap->allocated) - heap_at_half) / between);
      std::printf("\n");
    }
  }
  const cluster_route_counters routed = a.route_counters();
  std::printf("failed %zu; node a asked %llu locally, sent %llu to node b\n", asks.failed(),
              static_cast<unsigned long long>(routed.local_asks), static_cast<unsigned long long>(routed.remote_asks));
  // Left gracefully, so that a run after this one on the same database finds every shard free.
  a.leave(std::chrono::seconds(30));
  b.leave(std::chrono::seconds(30));
  return asks.failed() == 0 ? 0 : 1;
}
