// Approvals at scale: N agents each ask once and pause on a call that needs
// approval; the decisions are then posted in bulk (every decide sent before
// any is awaited) and each continues its request to its end. Prints:
//
//   1. decisions per second: N over the time from the first decide sent to
//      the last continued request's end;
//   2. memory per paused request: resident memory grown from the agents'
//      spawn to every request paused, divided by N;
//   3. the same two for a baseline measured in the same run: the same turn
//      with no approval rule (asks per second, each a whole turn, and
//      memory per finished request), and the ratios.
//
// Each measurement runs in a process of its own (in-memory store, scripted
// zero-latency model, a quick non-blocking tool); repeated, medians printed.
//
//   build/bench/approvals_bench [--agents 10000] [--repeat 3]

#include "actors/runtime.hpp"
#include "apps/simulation.hpp"
#include "bench/bench_support.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;

namespace {

using clock_type = std::chrono::steady_clock;

// Counts callbacks until `n` have come.
class countdown {
 public:
  explicit countdown(std::size_t n) : left_(n) {}
  void hit(bool ok) {
    if (!ok) failed_.fetch_add(1);
    std::lock_guard lock(m_);
    if (--left_ == 0) done_.notify_all();
  }
  void wait() {
    std::unique_lock lock(m_);
    done_.wait(lock, [&] { return left_ == 0; });
  }
  std::size_t failed() const { return failed_.load(); }

 private:
  std::mutex m_;
  std::condition_variable done_;
  std::size_t left_;
  std::atomic<std::size_t> failed_{0};
};

// {RSS grown per request once every request paused (or ended, without
// approvals), requests per second of the bulk phase, failures}.
std::vector<double> run(std::size_t agents, bool approvals) {
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("sent");
    return scripted_reply::tools({tool_call{"c1", "send", {{"to", "bob"}}, std::nullopt}});
  });
  runtime rt({.provider = model, .telemetry = std::make_shared<log_sink>(false)});
  tool send;
  send.spec = {"send", "sends", {{"type", "object"}}};
  send.blocking = false;
  send.run = [](const boost::json::object&, const tool_context&) { return boost::json::value("sent"); };
  rt.tools().add(send);
  std::vector<agent_spec> specs;
  for (std::size_t i = 0; i < agents; ++i) {
    agent_spec spec{.id = "a" + std::to_string(i), .model = "m", .tools = {"send"}};
    if (approvals) spec.approvals["send"] = approval_rule{approval_mode::always};
    specs.push_back(std::move(spec));
  }
  const std::vector<agent> all = rt.spawn_agents(std::move(specs));
  const std::size_t rss_spawned = current_rss_bytes();

  // Each agent asks once; without approvals this is the measured phase.
  countdown asked(agents);
  const auto ask_start = clock_type::now();
  for (const agent& a : all)
    a.ask("mail bob", {.request_id = "r-" + a.id(),
                       .on_reply = [&, approvals](const reply& r) { asked.hit(approvals ? r.paused() : r.ok()); }});
  asked.wait();
  const double ask_seconds = std::chrono::duration<double>(clock_type::now() - ask_start).count();
  const std::size_t rss_paused = current_rss_bytes();
  double per_second = static_cast<double>(agents) / ask_seconds;
  std::size_t failed = asked.failed();

  if (approvals) {
    countdown decided(agents);
    const auto start = clock_type::now();
    for (const agent& a : all) {
      decision d;
      d.request_id = "r-" + a.id();
      d.tool_call_id = "c1";
      d.answer = verdict::approve;
      d.decided_by = "bench";
      a.decide(d, {.on_reply = [&](const reply& r) { decided.hit(r.ok()); }});
    }
    decided.wait();
    per_second = static_cast<double>(agents) / std::chrono::duration<double>(clock_type::now() - start).count();
    failed += decided.failed();
  }
  const double grown = rss_paused > rss_spawned ? static_cast<double>(rss_paused - rss_spawned) : 0.0;
  return {grown / static_cast<double>(agents), per_second, static_cast<double>(failed)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t agents = flag(argc, argv, "--agents", 10'000);
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  std::vector<double> paused_bytes, decisions, base_bytes, asks;
  double failures = 0;
  for (std::size_t i = 0; i < repeat; ++i) {
    const auto a = in_child([&] { return run(agents, true); });
    const auto b = in_child([&] { return run(agents, false); });
    if (a.size() != 3 || b.size() != 3) {
      std::fprintf(stderr, "a measurement's process failed\n");
      return 1;
    }
    paused_bytes.push_back(a[0]);
    decisions.push_back(a[1]);
    base_bytes.push_back(b[0]);
    asks.push_back(b[1]);
    failures += a[2] + b[2];
  }
  const double pb = median(paused_bytes), d = median(decisions), bb = median(base_bytes), s = median(asks);
  std::printf("agents %zu, repeats %zu (medians), failed requests %.0f\n", agents, repeat, failures);
  std::printf("paused:   %8.0f decisions/s (each continues its request to its end), %6.0f bytes per paused request\n",
              d, pb);
  std::printf("baseline: %8.0f turns/s (the same turn, no approval),          %6.0f bytes per finished request\n", s,
              bb);
  std::printf("ratios:   decisions/s : turns/s %.2f, memory %.2f\n", d / s, bb > 0 ? pb / bb : 0.0);
  return failures > 0 ? 1 : 0;
}
