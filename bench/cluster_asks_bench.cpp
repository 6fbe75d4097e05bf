// Asks a second through a cluster of 1, 2 and 3 cluster_nodes on one
// PostgreSQL (actors/cluster/cluster_node.hpp), next to a plain runtime on
// the same database (the baseline). The nodes run in one process, each with
// its own CAF system, transport and membership, so that one closed loop can
// enter through every node: W asks in flight, ask i of slot s through node
// s mod N to agent s (of W agents spread over the shards), the next started
// from the reply's callback; an agent held elsewhere is asked over TCP. Each
// slot's conversation moves to a new thread every 16 asks, so that contexts
// stay short. Two more configurations of 2 and 3 nodes have each slot enter
// through the node that holds its agent: no ask crosses, which tells the
// cost of the remote hop from that of running more nodes on the machine. The model is scripted (answers at once), or
// with --mock each node's HTTP provider calls one local mock model server (bench/mock_model_server.hpp) answering after
// --latency-us. Each configuration runs in a child process of its own, the configurations take turns, and the figures
// are medians over the repeats: asks/s over the measured seconds (after a second of warm-up), the share of asks sent to
// another node, the process's CPU per ask (the database server's not
// counted), and the ratio to the plain runtime of the same repeat.
//
//   cluster_asks_bench CONNINFO [--seconds S] [--in-flight W] [--repeat R]
//                      [--heartbeat-ms H] [--scheduler-threads T] [--mock] [--latency-us L]

#include "bench/mock_model_server.hpp"
#include "bench_support.hpp"
#include "closed_loop.hpp"
#include "cluster_bench_nodes.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/store/postgres/postgres_store.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t asks_per_thread = 16;

struct settings {
  std::string conninfo;
  double seconds = 5;
  std::size_t in_flight = 64;
  bench::cluster_timings timings;
  std::optional<std::chrono::microseconds> mock_latency;  // unset: the scripted model
  std::size_t scheduler_threads = 0;                      // each runtime's; 0: one per core
};

// A node's model: each its own provider (and HTTP I/O thread), as each
// process of a real cluster has.
std::shared_ptr<llm_provider> model(const std::string& mock_url) {
  if (mock_url.empty())
    return std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("Sure."); });
  return std::make_shared<http_llm_provider>(http_options_for(mock_url, "", bench::no_retries()),
                                             std::make_shared<http_client>());
}

// Keeps `slots` asks going through `ask` until stopped; counts the replies.
class ask_loop {
 public:
  using ask_function = std::function<request(std::size_t slot, ask_options)>;
  ask_loop(std::size_t slots, std::string prefix, ask_function ask)
      : slots_(slots), prefix_(std::move(prefix)), ask_(std::move(ask)), sent_(slots, 0) {}

  void start() {
    running_ = slots_;
    for (std::size_t s = 0; s < slots_; ++s) next(s);
  }
  // Stops starting asks and waits for those in flight.
  void stop() {
    stopping_ = true;
    std::unique_lock lock(m_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }
  std::uint64_t done() const { return done_.load(); }
  std::uint64_t failed() const { return failed_.load(); }

 private:
  void next(std::size_t slot) {
    const std::size_t k = sent_[slot]++;  // a slot has one ask at a time
    const std::string thread = prefix_ + "-" + std::to_string(slot) + "-" + std::to_string(k / asks_per_thread);
    ask_options o;
    o.thread_id = thread;
    o.on_reply = [this, slot](const reply& r) {
      ++done_;
      if (!r.ok()) ++failed_;
      if (!stopping_) {
        next(slot);
        return;
      }
      // The last touch of the loop: stop() may return, and the loop end, once this is unlocked.
      std::lock_guard lock(m_);
      --running_;
      idle_.notify_all();
    };
    ask_(slot, std::move(o));
  }

  std::size_t slots_;
  std::string prefix_;
  ask_function ask_;
  std::vector<std::size_t> sent_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> done_{0}, failed_{0};
  std::mutex m_;
  std::condition_variable idle_;
  std::size_t running_ = 0;
};

// Warms up for a second, then counts the replies and the CPU over the
// measured seconds: {asks/s, failed, CPU µs an ask}.
std::vector<double> measure(ask_loop& loop, double seconds) {
  loop.start();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::uint64_t done0 = loop.done(), failed0 = loop.failed();
  const double cpu0 = bench::process_cpu_seconds();
  const auto t0 = clock_type::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::uint64_t done1 = loop.done(), failed1 = loop.failed();
  const double cpu = bench::process_cpu_seconds() - cpu0;
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  loop.stop();
  const auto asks = static_cast<double>(done1 - done0);
  return {asks / elapsed, static_cast<double>(failed1 - failed0), asks > 0 ? cpu * 1e6 / asks : 0};
}

std::string run_prefix(const char* what) {
  // Threads of every run are new: no lease of an earlier run is in the way.
  return std::string(what) + "-" + std::to_string(::getpid());
}

std::vector<double> plain_run(const settings& s) {
  std::unique_ptr<bench::mock_model_server> mock;
  if (s.mock_latency) mock = std::make_unique<bench::mock_model_server>(*s.mock_latency);
  runtime rt({.provider = model(mock ? mock->base_url() : ""),
              .store = std::make_shared<postgres_store>(s.conninfo),
              .telemetry = std::make_shared<log_sink>(false),
              .scheduler_threads = s.scheduler_threads,
              .owner_id = run_prefix("plain")});
  std::vector<agent> agents;
  for (std::size_t i = 0; i < s.in_flight; ++i)
    agents.push_back(rt.spawn_agent({.id = bench::agent_name(i), .model = "m"}));
  ask_loop loop(s.in_flight, run_prefix("plain"),
                [&](std::size_t slot, ask_options o) { return agents[slot].ask("What now?", std::move(o)); });
  std::vector<double> out = measure(loop, s.seconds);
  out.push_back(0);  // no remote asks
  return out;
}

// `at_holder`: each slot enters through the node that holds its agent (as a
// load balancer that knows the shards would send it), else through node
// slot mod N.
std::vector<double> cluster_run(const settings& s, std::size_t node_count, bool at_holder) {
  std::unique_ptr<bench::mock_model_server> mock;
  if (s.mock_latency) mock = std::make_unique<bench::mock_model_server>(*s.mock_latency);
  const std::string run = run_prefix("n");
  std::vector<std::unique_ptr<cluster_node>> nodes;
  std::vector<cluster_node*> all;
  for (std::size_t i = 0; i < node_count; ++i) {
    cluster_node_options o = bench::cluster_bench_options(s.conninfo, run + "-" + std::to_string(i), s.timings,
                                                          s.in_flight, model(mock ? mock->base_url() : ""));
    o.runtime.scheduler_threads = s.scheduler_threads;
    nodes.push_back(std::make_unique<cluster_node>(std::move(o)));
    all.push_back(nodes.back().get());
  }
  bench::wait_until_shared(all, s.timings.shards);
  for (cluster_node* n : all) n->membership().wait_rounds(1, std::chrono::seconds(5));
  std::vector<cluster_agent> entries;
  for (std::size_t i = 0; i < s.in_flight; ++i) {
    cluster_node* entry = all[i % node_count];
    if (at_holder)
      if (auto where = all.front()->membership().locate(bench::agent_name(i)))
        for (cluster_node* n : all)
          if (n->id() == where->node_id) entry = n;
    entries.push_back(entry->agent(bench::agent_name(i)));
  }
  ask_loop loop(s.in_flight, run,
                [&](std::size_t slot, ask_options o) { return entries[slot].ask("What now?", std::move(o)); });
  std::vector<double> out = measure(loop, s.seconds);
  std::uint64_t local = 0, remote = 0;
  for (cluster_node* n : all) {
    local += n->route_counters().local_asks;
    remote += n->route_counters().remote_asks;
  }
  out.push_back(local + remote > 0 ? static_cast<double>(remote) / static_cast<double>(local + remote) : 0);
  // Left gracefully, so that the next configuration finds every shard free.
  for (cluster_node* n : all) n->leave(std::chrono::seconds(30));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: cluster_asks_bench CONNINFO [--seconds S] [--in-flight W] [--repeat R] [--heartbeat-ms H] "
                 "[--scheduler-threads T] [--mock] [--latency-us L]\n");
    return 2;
  }
  settings s;
  s.conninfo = argv[1];
  s.seconds = static_cast<double>(bench::flag(argc, argv, "--seconds", 5));
  s.in_flight = bench::flag(argc, argv, "--in-flight", 64);
  s.timings.heartbeat_ms = bench::flag(argc, argv, "--heartbeat-ms", s.timings.heartbeat_ms);
  s.timings.dead_after_ms = 10 * s.timings.heartbeat_ms;
  s.scheduler_threads = bench::flag(argc, argv, "--scheduler-threads", 0);
  const std::size_t repeat = bench::flag(argc, argv, "--repeat", 3);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--mock") == 0)
      s.mock_latency = std::chrono::microseconds(bench::flag(argc, argv, "--latency-us", 5000));

  struct configuration {
    const char* name;
    std::size_t nodes;  // 0: the plain runtime
    bool at_holder;
  };
  const configuration configurations[] = {{"plain runtime", 0, false}, {"1 node", 1, false},
                                          {"2 nodes", 2, false},       {"3 nodes", 3, false},
                                          {"2 at holder", 2, true},    {"3 at holder", 3, true}};
  constexpr std::size_t count = std::size(configurations);
  std::vector<double> rate[count], failed[count], cpu[count], remote[count], ratio[count];
  for (std::size_t r = 0; r < repeat; ++r) {
    double baseline = 0;
    for (std::size_t c = 0; c < count; ++c) {
      const configuration& k = configurations[c];
      const std::vector<double> f =
          bench::in_child([&] { return k.nodes == 0 ? plain_run(s) : cluster_run(s, k.nodes, k.at_holder); });
      if (f.size() != 4) {
        std::fprintf(stderr, "%s: the run did not finish\n", k.name);
        return 1;
      }
      if (c == 0) baseline = f[0];
      rate[c].push_back(f[0]);
      failed[c].push_back(f[1]);
      cpu[c].push_back(f[2]);
      remote[c].push_back(f[3]);
      ratio[c].push_back(baseline > 0 ? f[0] / baseline : 0);
      std::printf("repeat %zu %-13s %8.0f asks/s  failed %.0f  CPU %6.1f µs an ask  remote %4.1f%%  x%.2f\n", r, k.name,
                  f[0], f[1], f[2], 100 * f[3], ratio[c].back());
      std::fflush(stdout);
    }
  }
  if (s.mock_latency)
    std::printf("model: a mock answering after %.1f ms\n", static_cast<double>(s.mock_latency->count()) / 1000);
  else
    std::printf("model: scripted, answering at once\n");
  std::printf("%zu asks in flight over %zu agents, %u shards, heartbeat %zu ms; %.0f s measured; medians of %zu:\n",
              s.in_flight, s.in_flight, s.timings.shards, s.timings.heartbeat_ms, s.seconds, repeat);
  for (std::size_t c = 0; c < count; ++c)
    std::printf("%-13s %8.0f asks/s  failed %.0f  CPU %6.1f µs an ask  remote %4.1f%%  x%.2f of the plain runtime\n",
                configurations[c].name, bench::median(rate[c]), bench::median(failed[c]), bench::median(cpu[c]),
                100 * bench::median(remote[c]), bench::median(ratio[c]));
  return 0;
}
