// What `simulate --report` costs on a large event log: writes a synthetic
// log shaped as the runner writes it (every agent activated every round
// with a feed of 10 posts in its observation, then one action each: 30%
// posts, 30% reposts of a heavy-tailed choice of earlier posts, 20% likes,
// 20% nothing), then times, each in a process of its own:
//
//   1. reading the log line by line and nothing else (the floor);
//   2. digest_event_log with its default table of candidates;
//   3. the same with a table of 1,000, which overflows (a second pass);
//   4. write_html_report (the digest and the page).
//
// Prints the log's size, and the medians of seconds and peak RSS.
//
//   build/bench/report_bench [--agents 100000] [--rounds 5] [--repeat 3]

#include "bench/bench_support.hpp"
#include "json/json_text.hpp"
#include "simulation/html_report.hpp"
#include "world/seeded_random.hpp"

#include <sys/resource.h>

#include <boost/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace troupe;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;
namespace json = boost::json;

namespace {

std::string agent_id(std::size_t i) { return "a-" + std::to_string(i); }

// The log, and the report the runner would have returned with it.
scenario_report write_log(const std::string& path, std::size_t agents, std::int64_t rounds) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const auto line = [&](const json::object& o) { out << json_text(o) << '\n'; };
  line({{"event", "run"}, {"name", "report bench"}, {"seed", 1}, {"agents", agents}, {"world", "social"}});
  json::array feed;
  for (int i = 0; i < 10; ++i)
    feed.push_back(json::object{{"id", "p0-" + std::to_string(i)},
                                {"author", agent_id(static_cast<std::size_t>(i))},
                                {"text", "Thoughts of " + agent_id(static_cast<std::size_t>(i)) + " in round 1."}});
  const json::object observation{{"feed", feed}};
  std::vector<std::string> posts;
  scenario_report report;
  report.name = "report bench";
  report.agents = agents;
  report.rounds = rounds;
  for (std::int64_t r = 1; r <= rounds; ++r) {
    round_summary summary;
    summary.round = r;
    summary.active = agents;
    line({{"event", "round"}, {"round", r}, {"hour", 8 + r}, {"active", agents}});
    for (std::size_t a = 0; a < agents; ++a)
      line({{"event", "activation"},
            {"round", r},
            {"agent", agent_id(a)},
            {"observation", observation},
            {"answer", "Done for this round."},
            {"input_tokens", 300},
            {"output_tokens", 12}});
    std::vector<std::string> made;
    for (std::size_t a = 0; a < agents; ++a) {
      const std::uint64_t bits = draw64(1, static_cast<std::uint64_t>(r), a);
      const double u = unit_draw(bits);
      json::object act{{"event", "action"}, {"round", r}, {"agent", agent_id(a)}, {"seq", 0}};
      std::string kind;
      if (u < 0.3 || posts.empty()) {
        made.push_back("p" + std::to_string(r) + "-" + std::to_string(a));
        kind = "post";
        act["arguments"] = json::object{{"text", "Thoughts of " + agent_id(a) + "."}};
        act["result"] = json::object{{"id", made.back()}};
      } else if (u < 0.6) {
        // Heavy-tailed: the first posts draw most reposts, the rest a few each.
        const double v = unit_draw(mix64(bits));
        const auto k = static_cast<std::size_t>(std::pow(v, 4.0) * static_cast<double>(posts.size()));
        const std::string& root = posts[std::min(k, posts.size() - 1)];
        kind = "repost";
        act["arguments"] = json::object{{"post_id", root}};
        act["result"] = json::object{{"id", "r" + std::to_string(r) + "-" + std::to_string(a)}, {"root", root}};
      } else if (u < 0.8) {
        kind = "like";
        act["arguments"] = json::object{{"post_id", posts.front()}};
        act["result"] = json::object{{"ok", true}};
      } else {
        kind = "do_nothing";
        act["arguments"] = json::object{};
        act["result"] = json::object{{"ok", true}};
      }
      act["action"] = kind;
      line(act);
      ++summary.actions[kind];
      ++report.actions[kind];
    }
    posts.insert(posts.end(), made.begin(), made.end());
    line({{"event", "round_end"}, {"round", r}, {"active", agents}, {"failed", 0}, {"refused", 0}});
    report.per_round.push_back(summary);
  }
  return report;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024;
}

// Seconds and peak RSS of `fn`, in a child process.
std::vector<double> measured(const std::function<void()>& fn) {
  return in_child([&] {
    const auto started = std::chrono::steady_clock::now();
    fn();
    return std::vector<double>{std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                               peak_rss_mib()};
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t agents = flag(argc, argv, "--agents", 100'000);
  const auto rounds = static_cast<std::int64_t>(flag(argc, argv, "--rounds", 5));
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  const std::string log = (std::filesystem::temp_directory_path() / "troupe-report-bench.jsonl").string();
  const std::string page = (std::filesystem::temp_directory_path() / "troupe-report-bench.html").string();
  const scenario_report report = write_log(log, agents, rounds);
  const auto digest = digest_event_log(log);
  std::printf("log: %.0f MB, %zu lines, %zu reposts; the top post reposted %zu times\n",
              static_cast<double>(std::filesystem::file_size(log)) / 1e6, digest.lines, digest.reposts,
              digest.spread.empty() ? 0 : digest.spread[0].reposts);

  digest_limits small;
  small.candidate_posts = 1'000;
  const std::vector<std::pair<const char*, std::function<void()>>> cases{
      {"read the lines only",
       [&] {
         std::ifstream in(log, std::ios::binary);
         std::string line;
         std::size_t n = 0;
         while (std::getline(in, line)) ++n;
         if (n == 0) std::abort();
       }},
      {"digest", [&] { digest_event_log(log); }},
      {"digest, 1,000 candidates", [&] { digest_event_log(log, small); }},
      {"write_html_report", [&] { write_html_report(report, log, page); }},
  };
  std::vector<std::vector<double>> seconds(cases.size()), rss(cases.size());
  for (std::size_t i = 0; i < repeat; ++i)
    for (std::size_t c = 0; c < cases.size(); ++c) {  // alternating, so a slow spell hits every case
      const auto m = measured(cases[c].second);
      if (m.size() != 2) return 1;
      seconds[c].push_back(m[0]);
      rss[c].push_back(m[1]);
    }
  std::printf("%-28s %10s %14s\n", "", "seconds", "peak RSS MiB");
  for (std::size_t c = 0; c < cases.size(); ++c)
    std::printf("%-28s %10.2f %14.1f\n", cases[c].first, median(seconds[c]), median(rss[c]));
  std::filesystem::remove(log);
  std::filesystem::remove(page);
  return 0;
}
