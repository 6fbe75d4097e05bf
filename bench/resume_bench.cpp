// Resume under SIGKILL: a scripted social scenario (2,000 agents, 20 rounds,
// every agent active every round, on SQLite) run once without interruption,
// then again with `troupe simulate` killed with SIGKILL at 10 seeded random
// points and continued with --resume after each. Prints the kills, the
// resumes, the time each kill cost (the interrupted run's wall time beyond
// the uninterrupted one's, per kill) and whether the final event logs are
// byte-identical.
//
//   resume_bench [--agents N] [--rounds N] [--kills N] [--seed N] [--troupe PATH]
//
// A kill point is drawn as a share of the uninterrupted run's event log: the
// run is killed once its log has grown past it (polled), after a further
// random delay of up to a round's time, so kills land anywhere in a round,
// not only at its commits.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

namespace {

struct settings {
  int agents = 2000;
  int rounds = 20;
  int kills = 10;
  unsigned seed = 11;
  std::string troupe = TROUPE_BINARY;
};

std::string scenario_text(const settings& s) {
  return "name = \"resume bench\"\nseed = 3\nconcurrency = 256\n\n"
         "[world]\nkind = \"social\"\nfeed_size = 10\ninbox_size = 5\n"
         "graph = { kind = \"barabasi_albert\", m = 3 }\n\n"
         "[[population]]\nname = \"people\"\ncount = " +
         std::to_string(s.agents) +
         "\nmodel = \"scripted\"\n"
         "policy = { post = 1, reply = 1, repost = 0.5, like = 2, follow = 0.2, send_message = 0.5, do_nothing = 1 }\n"
         "persona = \"You are {id}.\"\n\n"
         "[[workflow]]\nrun = " +
         std::to_string(s.rounds / 2) +
         "\n\n[[workflow]]\ninject = { action = \"post\", as = \"\", arguments = { text = \"Breaking news.\" } }\n\n"
         "[[workflow]]\ninterview = { question = \"What happened today?\", sample = 50 }\n\n"
         "[[workflow]]\nrun = " +
         std::to_string(s.rounds - s.rounds / 2) + "\n";
}

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t start(const settings& s, const std::string& scenario, const std::string& db, const std::string& log,
            bool resume) {
  std::fflush(stdout);  // or the child writes what this process buffered
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::vector<std::string> argv{s.troupe,  "simulate",     "--scenario", scenario,
                                  "--store", "sqlite:" + db, "--events",   log};
    if (resume) argv.push_back("--resume");
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for the process; true when it exited 0.
bool finished_well(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--agents")
      s.agents = std::atoi(argv[i + 1]);
    else if (flag == "--rounds")
      s.rounds = std::atoi(argv[i + 1]);
    else if (flag == "--kills")
      s.kills = std::atoi(argv[i + 1]);
    else if (flag == "--seed")
      s.seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (flag == "--troupe")
      s.troupe = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("troupe-resume-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string scenario = (dir / "scenario.toml").string();
  std::ofstream(scenario) << scenario_text(s);

  // The uninterrupted run.
  const std::string whole_db = (dir / "whole.db").string(), whole_log = (dir / "whole.log").string();
  auto t0 = clk::now();
  if (!finished_well(start(s, scenario, whole_db, whole_log, false))) {
    std::fprintf(stderr, "the uninterrupted run failed\n");
    return 1;
  }
  const double whole_seconds = seconds_since(t0);
  const std::uint64_t whole_bytes = file_size(whole_log);
  const double round_seconds = whole_seconds / s.rounds;

  // Kill points: shares of the whole log, sorted, and a delay after each.
  std::mt19937_64 random(s.seed);
  std::uniform_real_distribution<double> share(0.02, 0.98), delay(0, round_seconds);
  std::vector<double> points(static_cast<std::size_t>(s.kills));
  for (auto& p : points) p = share(random);
  std::sort(points.begin(), points.end());

  const std::string db = (dir / "run.db").string(), log = (dir / "run.log").string();
  int kills = 0, resumes = 0, finished_early = 0;
  double interrupted_seconds = 0;
  t0 = clk::now();
  for (std::size_t k = 0; k <= points.size(); ++k) {
    const auto started = clk::now();
    const pid_t pid = start(s, scenario, db, log, k > 0);
    if (k > 0) ++resumes;
    if (k == points.size()) {
      if (!finished_well(pid)) {
        std::fprintf(stderr, "the last resume failed\n");
        return 1;
      }
      interrupted_seconds += seconds_since(started);
      break;
    }
    const auto target = static_cast<std::uint64_t>(points[k] * static_cast<double>(whole_bytes));
    const auto wait_after = std::chrono::duration<double>(delay(random));
    bool exited = false;
    int status = 0;
    while (file_size(log) < target) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!exited) {
      const auto until = clk::now() + wait_after;
      while (clk::now() < until && !exited) {
        if (::waitpid(pid, &status, WNOHANG) == pid) exited = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (exited) {
      // It ended (or failed) before the kill point: say so, and stop.
      std::fprintf(stderr, "run %zu ended before its kill point (status %d)\n", k, status);
      ++finished_early;
      break;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ++kills;
    interrupted_seconds += seconds_since(started);
    std::printf("kill %d at %.0f%% of the log (+%.0f ms): log %llu bytes at the kill\n", kills, points[k] * 100,
                wait_after.count() * 1000, static_cast<unsigned long long>(file_size(log)));
  }
  const bool identical = finished_early == 0 && slurp(log) == slurp(whole_log);

  std::printf("scenario: %d agents, %d rounds (every agent every round), an intervention and an interview of 50\n",
              s.agents, s.rounds);
  std::printf("uninterrupted: %.2f s, event log %llu bytes\n", whole_seconds,
              static_cast<unsigned long long>(whole_bytes));
  std::printf("interrupted: %d SIGKILLs, %d resumes, %.2f s in all\n", kills, resumes, interrupted_seconds);
  if (kills > 0)
    std::printf("time lost per kill: %.2f s (%.2f rounds of the uninterrupted run)\n",
                (interrupted_seconds - whole_seconds) / kills,
                (interrupted_seconds - whole_seconds) / kills / round_seconds);
  std::printf("final event logs identical: %s\n", identical ? "yes" : "no");
  fs::remove_all(dir);
  return identical ? 0 : 1;
}
