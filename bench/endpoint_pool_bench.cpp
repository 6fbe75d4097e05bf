// Model calls per second through an endpoint pool over two local
// OpenAI-compatible servers that answer after a fixed delay, against the
// HTTP provider used directly with the same concurrency: a plain load client
// that keeps `cap` calls going on each server, starting the next call as one
// ends. The pool is driven the same way, and then with every call given at
// once, those beyond its caps held in its queue, as for a round of agents. Each run is a process of its
// own, the two kinds alternating; medians of --repeat runs. CPU per call is
// the process's (client, pool and the mock servers alike), so the difference
// between the two is what the pool costs; and that cost alone, through a
// member that answers inside stream(), without HTTP.
//
//   build/bench/endpoint_pool_bench [--calls 10000] [--cap 16] [--latency-us 5000] [--repeat 3]

#include "bench/bench_support.hpp"
#include "bench/closed_loop.hpp"
#include "bench/mock_model_server.hpp"
#include "runtime/llm/endpoint_pool.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>

using namespace troupe;
using troupe::bench::closed_loop;
using troupe::bench::finish_line;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;
using troupe::bench::mock_model_server;
using troupe::bench::no_retries;
using troupe::bench::process_cpu_seconds;
using clk = std::chrono::steady_clock;

namespace {

std::vector<double> direct_run(std::size_t calls, std::size_t cap, std::chrono::microseconds latency) {
  mock_model_server a(latency), b(latency);
  auto client = std::make_shared<http_client>();
  http_llm_provider pa(http_options_for(a.base_url(), "", no_retries()), client);
  http_llm_provider pb(http_options_for(b.base_url(), "", no_retries()), client);
  finish_line finish;
  std::atomic<std::size_t> started{0};
  closed_loop la{pa, started, calls, finish}, lb{pb, started, calls, finish};
  const double cpu0 = process_cpu_seconds();
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < cap; ++i) {
    la.next();
    lb.next();
  }
  finish.wait_for(calls);
  const double seconds = std::chrono::duration<double>(clk::now() - t0).count();
  const double cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / static_cast<double>(calls);
  return {static_cast<double>(calls) / seconds, static_cast<double>(finish.failed), cpu_us};
}

// `all_at_once`: every call given to the pool at the start, those beyond its
// caps waiting in its queue; else a closed loop of as many calls as the caps
// allow, as the direct run does.
std::vector<double> pool_run(std::size_t calls, std::size_t cap, std::chrono::microseconds latency, bool all_at_once) {
  mock_model_server a(latency), b(latency);
  endpoint_pool pool(http_pool_members({{a.base_url(), "", cap}, {b.base_url(), "", cap}}, http_settings{},
                                       std::make_shared<http_client>()));
  finish_line finish;
  std::atomic<std::size_t> started{0};
  closed_loop loop{pool, started, calls, finish};
  const double cpu0 = process_cpu_seconds();
  const auto t0 = clk::now();
  if (all_at_once)
    for (std::size_t i = 0; i < calls; ++i)
      pool.stream(bench::short_call(), {{}, [&](llm_result r) { finish.count(r); }});
  else
    for (std::size_t i = 0; i < 2 * cap; ++i) loop.next();
  finish.wait_for(calls);
  const double seconds = std::chrono::duration<double>(clk::now() - t0).count();
  const double cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / static_cast<double>(calls);
  return {static_cast<double>(calls) / seconds, static_cast<double>(finish.failed), cpu_us};
}

// The pool's own cost, without HTTP: µs a call (one thread, answers inside
// stream()) through a member that answers at once, directly and through a pool.
std::vector<double> own_cost(std::size_t calls) {
  auto member = std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("Sure."); });
  endpoint_pool pool({{"a", member, 16}});
  std::size_t answered = 0;
  auto per_call = [&](llm_provider& p) {
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < calls; ++i)
      p.stream(bench::short_call(), {[](llm_delta) {}, [&](llm_result) { ++answered; }});
    return std::chrono::duration<double, std::micro>(clk::now() - t0).count() / static_cast<double>(calls);
  };
  const double direct = per_call(*member);
  const double pooled = per_call(pool);
  return {direct, pooled, static_cast<double>(answered)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t calls = flag(argc, argv, "--calls", 10'000);
  const std::size_t cap = flag(argc, argv, "--cap", 16);
  const auto latency = std::chrono::microseconds(flag(argc, argv, "--latency-us", 5'000));
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  // Per kind of run: calls/s, its ratio to the direct run's just before, CPU µs a call; one entry a run.
  std::vector<double> rate[3], ratio[3], cpu[3], failed;
  for (std::size_t i = 0; i < repeat; ++i) {
    const std::vector<double> r[3] = {in_child([&] { return direct_run(calls, cap, latency); }),
                                      in_child([&] { return pool_run(calls, cap, latency, false); }),
                                      in_child([&] { return pool_run(calls, cap, latency, true); })};
    double failures = 0;
    for (int k = 0; k < 3; ++k) {
      if (r[k].size() < 3) {
        std::fprintf(stderr, "a run did not finish\n");
        return 1;
      }
      rate[k].push_back(r[k][0]);
      ratio[k].push_back(r[k][0] / r[0][0]);
      failures += r[k][1];
      cpu[k].push_back(r[k][2]);
    }
    failed.push_back(failures);
  }
  std::printf("%zu calls, 2 servers answering after %.1f ms, %zu calls in flight on each; medians of %zu runs\n", calls,
              static_cast<double>(latency.count()) / 1000, cap, repeat);
  const char* names[3] = {"direct HTTP provider, closed loop", "endpoint pool, closed loop",
                          "endpoint pool, all calls at once"};
  for (int k = 0; k < 3; ++k)
    std::printf("%-34s %8.0f calls/s  (%.3f of direct)   CPU %5.1f µs a call\n", names[k], median(rate[k]),
                median(ratio[k]), median(cpu[k]));
  std::printf("ideal: %.0f calls/s\n", 2.0 * static_cast<double>(cap) / (static_cast<double>(latency.count()) / 1e6));
  std::vector<double> own_direct, own_pooled;
  for (std::size_t i = 0; i < repeat; ++i) {
    const auto r = in_child([&] { return own_cost(calls); });
    if (r.size() < 3) return 1;
    own_direct.push_back(r[0]);
    own_pooled.push_back(r[1]);
  }
  std::printf("a member answering at once, directly / through the pool: %.2f / %.2f µs a call\n", median(own_direct),
              median(own_pooled));
  if (median(failed) != 0) std::fprintf(stderr, "warning: %g calls failed\n", median(failed));
  return 0;
}
