// The social world's cost per round at 10,000, 100,000 and 1,000,000 agents
// on a Barabási–Albert graph (m = 3), every agent acting once a round with a
// fixed mix of actions and observed once a round: check, apply and observe
// as a round runner calls them, on one thread, without the runner, actors or
// models. The goal: the cost grows no faster than the actions, so the time
// per action stays flat from 10k to 1M agents.
//
//   build/bench/world_bench [--repeat 3] [--rounds 5] [--max-agents 1000000]
//
// Each size runs in a child process of its own (bench_support.hpp); the
// figures are medians over the rounds after the first (which has nothing to
// like yet), then over the repeats, in CPU time.

#include "bench_support.hpp"
#include "runtime/tools/tool.hpp"
#include "world/seeded_random.hpp"
#include "world/social_world.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace troupe;

namespace {

// CPU time of this thread: the machine is shared, and a phase's wall time
// would count the other processes' turns on the cores.
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

double seconds_since(double t) { return cpu_now() - t; }

double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  return 0;
}

// One action for `agent` in `round`, drawn from a source seeded by both:
// 30% post (1 in 30 of them to the channel), 25% like, 10% repost, 5% reply,
// 5% follow, 3% unfollow, 2% message, 20% nothing. Likes, reposts and
// replies aim at a post of the round before.
world_action draw_action(const social_world& w, std::uint32_t agent, std::int64_t round,
                         const std::vector<std::string>& last_posts) {
  seeded_random r(static_cast<std::uint64_t>(round) << 32 ^ agent);
  const std::uint32_t n = w.agents().size();
  const auto roll = r.below(100);
  const std::string text = "round " + std::to_string(round) + " from " + w.agents().id(agent) + ": what I think now";
  auto post_target = [&]() -> const std::string& { return last_posts[r.below(last_posts.size())]; };
  world_action a{round, {agent, 0}, "do_nothing", {}, nullptr};
  if (roll < 30) {
    a.name = "post";
    a.arguments = {{"text", text}};
    if (roll < 1) a.arguments["channel"] = "news";
  } else if (roll < 55 && !last_posts.empty()) {
    a.name = "like";
    a.arguments = {{"post_id", post_target()}};
  } else if (roll < 65 && !last_posts.empty()) {
    a.name = "repost";
    a.arguments = {{"post_id", post_target()}};
  } else if (roll < 70 && !last_posts.empty()) {
    a.name = "reply";
    a.arguments = {{"post_id", post_target()}, {"text", text}};
  } else if (roll < 75) {
    a.name = "follow";
    a.arguments = {{"agent", w.agents().id(static_cast<std::uint32_t>(r.below(n)))}};
  } else if (roll < 78) {
    std::uint32_t first = n;
    w.graph().for_each_followee(agent, [&](std::uint32_t b) { first = std::min(first, b); });
    if (first < n) {
      a.name = "unfollow";
      a.arguments = {{"agent", w.agents().id(first)}};
    }
  } else if (roll < 80) {
    a.name = "send_message";
    a.arguments = {{"to", w.agents().id(static_cast<std::uint32_t>(r.below(n)))}, {"text", text}};
  }
  return a;
}

// {build s, actions, check ms, apply ms, observe ms, world bytes at the end,
// peak RSS bytes, feed deliveries, observed bytes, world bytes before round
// 1}, medians over rounds 2..rounds.
std::vector<double> measure(std::uint32_t agents, int rounds) {
  auto t = cpu_now();
  world_spec spec;
  spec.graph.kind = graph_kind::barabasi_albert;
  spec.graph.m = 3;
  spec.channels = {{"news", ""}};
  social_world w(spec, 1);
  std::vector<std::string> ids;
  ids.reserve(agents);
  for (std::uint32_t i = 0; i < agents; ++i) ids.push_back("agent-" + std::to_string(i));
  w.populate(ids);
  // A channel of 1,000 subscribers at every size: a post's deliveries stay
  // bounded, so the actions alone set the work.
  for (std::uint32_t i = 0; i < agents; i += agents / 1'000) w.subscribe(i, "news");
  const double build = seconds_since(t);
  const double start_bytes = static_cast<double>(w.memory_bytes());
  std::vector<std::uint32_t> everyone(agents);
  for (std::uint32_t i = 0; i < agents; ++i) everyone[i] = i;

  std::vector<double> actions_n, check_ms, apply_ms, observe_ms, deliveries, observed;
  std::vector<std::string> last_posts;
  for (int round = 1; round <= rounds; ++round) {
    std::vector<world_action> drawn;
    drawn.reserve(agents);
    for (std::uint32_t a = 0; a < agents; ++a) drawn.push_back(draw_action(w, a, round, last_posts));

    t = cpu_now();
    std::size_t observed_bytes = 0;
    for (std::uint32_t a = 0; a < agents; ++a) observed_bytes += w.observe(a, round).text.size();
    const double observe = seconds_since(t);

    std::vector<world_action> accepted;
    accepted.reserve(agents);
    t = cpu_now();
    for (auto& a : drawn) {
      try {
        a.result = w.check(a);
        accepted.push_back(std::move(a));
      } catch (const tool_failure&) {
      }
    }
    const double check = seconds_since(t);

    t = cpu_now();
    w.apply(round, everyone, accepted);
    const double apply = seconds_since(t);

    last_posts.clear();
    for (const auto& a : accepted)
      if (a.name == "post" || a.name == "reply" || a.name == "repost")
        last_posts.emplace_back(a.result.at("post_id").as_string());
    if (round == 1) continue;
    actions_n.push_back(static_cast<double>(accepted.size()));
    check_ms.push_back(check * 1e3);
    apply_ms.push_back(apply * 1e3);
    observe_ms.push_back(observe * 1e3);
    deliveries.push_back(static_cast<double>(w.round_figures().at("feed_deliveries").to_number<std::uint64_t>()));
    observed.push_back(static_cast<double>(observed_bytes));
  }
  return {build,
          bench::median(actions_n),
          bench::median(check_ms),
          bench::median(apply_ms),
          bench::median(observe_ms),
          static_cast<double>(w.memory_bytes()),
          peak_rss_bytes(),
          bench::median(deliveries),
          bench::median(observed),
          start_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  const auto repeat = static_cast<int>(bench::flag(argc, argv, "--repeat", 3));
  const auto rounds = static_cast<int>(bench::flag(argc, argv, "--rounds", 5));
  const auto max_agents = bench::flag(argc, argv, "--max-agents", 1'000'000);
  std::printf("%10s %9s %10s %9s %9s %10s %9s %10s %10s %10s %10s %8s\n", "agents", "actions", "deliveries", "check ms",
              "apply ms", "observe ms", "round ms", "us/action", "start MB", "world MB", "peak RSS", "build s");
  for (const std::uint32_t agents : {10'000u, 100'000u, 1'000'000u}) {
    if (agents > max_agents) break;
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < repeat; ++i) runs.push_back(bench::in_child([&] { return measure(agents, rounds); }));
    auto field = [&](std::size_t k) {
      std::vector<double> v;
      for (const auto& r : runs)
        if (r.size() > k) v.push_back(r[k]);
      return bench::median(v);
    };
    const double round_ms = field(2) + field(3) + field(4);
    std::printf("%10u %9.0f %10.0f %9.1f %9.1f %10.1f %9.1f %10.3f %10.1f %10.1f %10.1f %8.2f\n", agents, field(1),
                field(7), field(2), field(3), field(4), round_ms, round_ms * 1e3 / field(1), field(9) / 1e6,
                field(5) / 1e6, field(6) / 1e6, field(0));
    std::fflush(stdout);
  }
}
