// The actor runtime's figures, each next to a raw CAF baseline measured in
// the same run:
//
//   1. memory per idle agent at 100,000 agents (spawned, empty default
//      thread) next to a bare CAF event-based actor;
//   2. ReAct turns per second across 10,000 agents (zero-latency scripted
//      model, one tool call per turn) next to CAF's raw request/response rate;
//   3. latency the runtime adds per turn at low load (one agent, one turn at
//      a time), p50 and p99, next to a raw CAF round trip.
//
// Each measurement runs in a child process of its own, so that one's memory
// does not flatter or burden the next. Repeats each figure and prints medians.
//
//   build/bench/runtime_bench [--agents-memory 100000] [--agents 10000] [--turns 5] [--repeat 5]

#include "apps/simulation.hpp"
#include "bench/bench_support.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <caf/all.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace troupe;
using clk = std::chrono::steady_clock;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;

namespace {

using ping_atom = caf::atom_constant<caf::atom("ping")>;

// --- 1. memory per idle agent ---------------------------------------------------------

std::vector<double> bare_actor_bytes(std::size_t n) {
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  const std::size_t before = current_rss_bytes();
  std::vector<caf::actor> actors;
  actors.reserve(n);
  for (std::size_t i = 0; i < n; ++i) actors.push_back(sys.spawn([]() -> caf::behavior { return {[](ping_atom) {}}; }));
  const double per = static_cast<double>(current_rss_bytes() - before) / static_cast<double>(n);
  for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  return {per};
}

std::vector<double> idle_agent_bytes(std::size_t n) {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{});
  runtime rt({.provider = model});
  const std::size_t before = current_rss_bytes();
  for (std::size_t i = 0; i < n; ++i)
    rt.spawn_agent({.id = "idle-" + std::to_string(i), .model = "scripted", .system_prompt = "You are idle."});
  const double per = static_cast<double>(current_rss_bytes() - before) / static_cast<double>(n);
  rt.shutdown();
  return {per};
}

// --- 2. throughput --------------------------------------------------------------------

// Raw CAF: `pairs` clients each make `rounds` request/response round trips
// with a server of their own, all at once. Returns messages per second.
std::vector<double> raw_request_rate(std::size_t pairs, std::size_t rounds) {
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::vector<caf::actor> servers;
  for (std::size_t i = 0; i < pairs; ++i)
    servers.push_back(sys.spawn([]() -> caf::behavior { return {[](ping_atom, int x) { return x + 1; }}; }));
  const auto start = clk::now();
  std::vector<caf::actor> clients;
  for (std::size_t i = 0; i < pairs; ++i) {
    clients.push_back(sys.spawn(
        [rounds](caf::event_based_actor* me, caf::actor server, caf::actor done) -> caf::behavior {
          auto step = std::make_shared<std::function<void(int)>>();
          *step = [me, server, done, rounds, step](int x) {
            if (static_cast<std::size_t>(x) == rounds) {
              me->send(done, ping_atom::value, x);
              me->quit();
              return;
            }
            me->request(server, caf::infinite, ping_atom::value, x).then([step](int y) { (*step)(y); });
          };
          (*step)(0);
          return {[](int) {}};
        },
        servers[i], caf::actor_cast<caf::actor>(self)));
  }
  for (std::size_t i = 0; i < pairs; ++i) self->receive([](ping_atom, int) {});
  const double seconds = std::chrono::duration<double>(clk::now() - start).count();
  for (auto& s : servers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  return {static_cast<double>(2 * pairs * rounds) / seconds};
}

std::vector<double> runtime_turn_rate(std::size_t agents, std::size_t turns) {
  simulation_progress progress;
  simulation_options o;
  o.agents = agents;
  o.turns = turns;
  o.tools_per_turn = 1;
  o.concurrency = 0;  // every agent at once, as the raw baseline's pairs all run at once
  const simulation_report r = run_simulation(o, progress);
  return {r.turns_per_second, static_cast<double>(r.turns_failed)};
}

// --- 3. latency -----------------------------------------------------------------------

std::vector<double> raw_round_trip_us(std::size_t n) {
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto server = sys.spawn([]() -> caf::behavior { return {[](ping_atom, int x) { return x; }}; });
  std::vector<double> us;
  for (std::size_t i = 0; i < n; ++i) {
    const auto t0 = clk::now();
    self->request(server, caf::infinite, ping_atom::value, 1).receive([](int) {}, [](caf::error&) {});
    us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  }
  caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
  return {percentile(us, 0.5), percentile(us, 0.99)};
}

std::vector<double> turn_latency_us(std::size_t n) {
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done", token_usage{40, 8});
    return scripted_reply::tools({tool_call{"t", "lookup", {{"key", 1}}, std::nullopt}}, token_usage{30, 12});
  });
  runtime rt({.provider = model});
  tool lookup;
  lookup.spec = {"lookup", "Looks a key up.", {{"type", "object"}}};
  lookup.blocking = false;
  lookup.run = [](const boost::json::object&, const tool_context&) { return boost::json::value("found"); };
  rt.tools().add(lookup);
  agent a = rt.spawn_agent({.id = "latency", .model = "scripted", .tools = {"lookup"}});
  std::vector<double> us;
  for (std::size_t i = 0; i < n; ++i) {
    // A fresh thread per turn keeps the projection the same size each time.
    ask_options o;
    o.thread_id = "t" + std::to_string(i);
    const auto t0 = clk::now();
    auto r = a.ask("question", std::move(o)).await(std::chrono::seconds(10));
    if (!r || !r->ok()) std::abort();
    us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  }
  rt.shutdown();
  return {percentile(us, 0.5), percentile(us, 0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t memory_agents = flag(argc, argv, "--agents-memory", 100'000);
  const std::size_t agents = flag(argc, argv, "--agents", 10'000);
  const std::size_t turns = flag(argc, argv, "--turns", 5);
  const std::size_t repeat = flag(argc, argv, "--repeat", 5);
  // Messages one simulated turn sends between actors (see docs/benchmarks.md): ask to
  // broker and agent (2), model call with its result (2), tool call with its
  // result (2), model call with one delta and the result (3), reply (1).
  constexpr double messages_per_turn = 10;

  std::vector<double> bare, idle, raw_rate, turn_rate, raw_p50, raw_p99, turn_p50, turn_p99;
  for (std::size_t i = 0; i < repeat; ++i) {
    bare.push_back(in_child([&] { return bare_actor_bytes(memory_agents); }).at(0));
    idle.push_back(in_child([&] { return idle_agent_bytes(memory_agents); }).at(0));
    raw_rate.push_back(in_child([&] { return raw_request_rate(agents, turns * 5); }).at(0));
    const auto t = in_child([&] { return runtime_turn_rate(agents, turns); });
    if (t.at(1) != 0) std::fprintf(stderr, "warning: %g turns failed\n", t.at(1));
    turn_rate.push_back(t.at(0));
    const auto raw = in_child([] { return raw_round_trip_us(2'000); });
    raw_p50.push_back(raw.at(0));
    raw_p99.push_back(raw.at(1));
    const auto lat = in_child([] { return turn_latency_us(2'000); });
    turn_p50.push_back(lat.at(0));
    turn_p99.push_back(lat.at(1));
  }

  std::printf("medians of %zu runs\n\n", repeat);
  std::printf("1. memory per idle agent (%zu agents)\n", memory_agents);
  std::printf("   troupe agent, empty default thread: %8.0f bytes\n", median(idle));
  std::printf("   bare CAF event-based actor:         %8.0f bytes\n\n", median(bare));
  const double rate = median(turn_rate);
  const double raw = median(raw_rate);
  std::printf("2. throughput (%zu agents, %zu turns each, 1 tool call per turn, zero-latency model)\n", agents, turns);
  std::printf("   troupe: %8.0f turns/s x %.0f messages/turn = %9.0f messages/s\n", rate, messages_per_turn,
              rate * messages_per_turn);
  std::printf("   raw CAF request/response:                  %9.0f messages/s\n", raw);
  std::printf("   ratio: %.2f\n\n", rate * messages_per_turn / raw);
  std::printf("3. latency per turn at low load (one agent, one turn at a time, 2,000 turns)\n");
  std::printf("   troupe turn (ask -> model -> tool -> model -> reply): p50 %6.1f us, p99 %6.1f us\n", median(turn_p50),
              median(turn_p99));
  std::printf("   raw CAF request/response round trip:                  p50 %6.1f us, p99 %6.1f us\n", median(raw_p50),
              median(raw_p99));
  return 0;
}
