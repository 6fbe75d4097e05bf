// troupe serve's metrics registry (apps/serve/metrics.hpp) against
// prometheus-cpp's, on the families serve registers: the cost of one update
// as serve makes it (the series found by its label values, then counted or
// observed), the same through a reference kept, the cost of rendering
// /metrics, and whether the two texts are the same bytes. Medians of
// --repeat runs, one thread.
//
//   build/bench/metrics_compare [--updates 1000000] [--agents 50] [--repeat 5]

#include "apps/serve/metrics.hpp"
#include "bench/bench_support.hpp"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using troupe::bench::flag;
using troupe::bench::median;
using clk = std::chrono::steady_clock;

namespace {

const std::vector<double> turn_bounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
const char* outcomes[] = {"ok", "error", "cancelled"};

double ns_per(clk::time_point t0, std::size_t n) {
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(n);
}

std::string agent(std::size_t i) { return "agent-" + std::to_string(i); }

struct figures {
  double lookup_counter_ns, lookup_histogram_ns, kept_counter_ns, render_us;
  std::string text;
};

figures ours(std::size_t updates, std::size_t agents) {
  troupe::serve::metrics_registry r;
  auto& turns =
      r.counter("troupe_turns_total", "Turns (requests to an agent) ended, by outcome.", {"agent", "outcome"});
  auto& seconds = r.histogram("troupe_turn_duration_seconds", "A turn's time from its start at the agent to its end.",
                              {"agent"}, turn_bounds);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < agents; ++i) names.push_back(agent(i));
  figures f{};
  auto t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i) turns.with({names[i % agents], outcomes[i % 3]}).add();
  f.lookup_counter_ns = ns_per(t0, updates);
  t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i)
    seconds.with({names[i % agents]}).observe(static_cast<double>(i % 1000) / 100);
  f.lookup_histogram_ns = ns_per(t0, updates);
  auto& kept = turns.with({names[0], "ok"});
  t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i) kept.add();
  f.kept_counter_ns = ns_per(t0, updates);
  constexpr int renders = 200;
  t0 = clk::now();
  for (int i = 0; i < renders; ++i) f.text = r.exposition();
  f.render_us = ns_per(t0, renders) / 1000;
  return f;
}

figures theirs(std::size_t updates, std::size_t agents) {
  prometheus::Registry r;
  auto& turns = prometheus::BuildCounter()
                    .Name("troupe_turns_total")
                    .Help("Turns (requests to an agent) ended, by outcome.")
                    .Register(r);
  auto& seconds = prometheus::BuildHistogram()
                      .Name("troupe_turn_duration_seconds")
                      .Help("A turn's time from its start at the agent to its end.")
                      .Register(r);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < agents; ++i) names.push_back(agent(i));
  figures f{};
  auto t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i)
    turns.Add({{"agent", names[i % agents]}, {"outcome", outcomes[i % 3]}}).Increment();
  f.lookup_counter_ns = ns_per(t0, updates);
  t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i)
    seconds.Add({{"agent", names[i % agents]}}, turn_bounds).Observe(static_cast<double>(i % 1000) / 100);
  f.lookup_histogram_ns = ns_per(t0, updates);
  auto& kept = turns.Add({{"agent", names[0]}, {"outcome", "ok"}});
  t0 = clk::now();
  for (std::size_t i = 0; i < updates; ++i) kept.Increment();
  f.kept_counter_ns = ns_per(t0, updates);
  constexpr int renders = 200;
  const prometheus::TextSerializer serializer;
  t0 = clk::now();
  for (int i = 0; i < renders; ++i) f.text = serializer.Serialize(r.Collect());
  f.render_us = ns_per(t0, renders) / 1000;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t updates = flag(argc, argv, "--updates", 1'000'000);
  const std::size_t agents = flag(argc, argv, "--agents", 50);
  const std::size_t repeat = flag(argc, argv, "--repeat", 5);
  std::vector<double> a[4], b[4];
  std::string text_a, text_b;
  for (std::size_t i = 0; i < repeat; ++i) {
    const figures x = ours(updates, agents), y = theirs(updates, agents);
    const double xs[] = {x.lookup_counter_ns, x.lookup_histogram_ns, x.kept_counter_ns, x.render_us};
    const double ys[] = {y.lookup_counter_ns, y.lookup_histogram_ns, y.kept_counter_ns, y.render_us};
    for (int k = 0; k < 4; ++k) {
      a[k].push_back(xs[k]);
      b[k].push_back(ys[k]);
    }
    text_a = x.text;
    text_b = y.text;
  }
  const char* rows[] = {"counter update, series by labels (ns)", "histogram update, series by labels (ns)",
                        "counter update, reference kept (ns)", "render /metrics (us)"};
  std::printf("%zu updates, %zu agents (%zu counter series, %zu histogram series); medians of %zu runs\n", updates,
              agents, agents * 3, agents, repeat);
  std::printf("%-42s %12s %14s %8s\n", "", "troupe", "prometheus-cpp", "ratio");
  for (int k = 0; k < 4; ++k)
    std::printf("%-42s %12.1f %14.1f %8.2f\n", rows[k], median(a[k]), median(b[k]), median(b[k]) / median(a[k]));
  std::printf("text: troupe %zu bytes, prometheus-cpp %zu bytes, %s\n", text_a.size(), text_b.size(),
              text_a == text_b ? "the same bytes" : "different bytes");
  if (flag(argc, argv, "--show", 0))
    std::printf("--- troupe\n%s--- prometheus-cpp\n%s", text_a.c_str(), text_b.c_str());
  return 0;
}
