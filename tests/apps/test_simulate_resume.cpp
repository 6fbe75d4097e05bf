// A scenario run killed with SIGKILL and continued with `troupe simulate
// --resume`: the final event log is the one an uninterrupted run with the
// same seed writes, byte for byte, and no agent's thread holds a request twice.
//
// The kills come from troupe_scenario_kill_child (support/scenario_kill_child.cpp),
// which runs the same scenario runner and dies at a commit the test names,
// so each case kills at the same point of the run every time.

#include "runtime/store/open_store.hpp"
#include "support/store_backends.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace troupe;

namespace {

const std::string social = std::string(TROUPE_EXAMPLES_DIR) + "/scenarios/social.toml";
const std::string town_hall = std::string(TROUPE_EXAMPLES_DIR) + "/scenarios/town_hall.toml";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("troupe-resume-" + testing::unique_suffix());
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

struct finished_process {
  int status = 0;
  std::string out;  // stdout and stderr
  bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool killed() const { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
};

// Runs a program (no shell: a PostgreSQL URI holds '&') and waits for it;
// `in_child` runs in the child before it starts the program.
finished_process run(const std::vector<std::string>& argv, const temp_dir& dir,
                     const std::function<void()>& in_child = {}) {
  const std::string out = dir / "output";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (in_child) in_child();
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  finished_process p;
  ::waitpid(pid, &p.status, 0);
  p.out = slurp(out);
  return p;
}

finished_process simulate(const temp_dir& dir, const std::string& scenario, const std::string& store,
                          const std::string& log, bool resume = false, const std::string& seed = "5") {
  std::vector<std::string> argv{TROUPE_BINARY, "simulate", "--scenario", scenario, "--seed", seed, "--events", log};
  if (!store.empty()) argv.insert(argv.end(), {"--store", store});
  if (resume) argv.push_back("--resume");
  return run(argv, dir);
}

// The social example with another number of people, written into `dir`.
std::string social_of(const temp_dir& dir, int people) {
  std::string text = slurp(social);
  const auto count = text.find("count = 20");
  REQUIRE(count != std::string::npos);
  text.replace(count, 10, "count = " + std::to_string(people));
  std::ofstream(dir / "social.toml") << text;
  fs::copy_file(fs::path(social).parent_path() / "profiles.csv", dir.path / "profiles.csv");
  return dir / "social.toml";
}

// The log an uninterrupted run writes.
std::string whole_log(const std::string& scenario) {
  temp_dir dir;
  const auto p = simulate(dir, scenario, "sqlite:" + (dir / "whole.db"), dir / "whole.log");
  INFO(p.out);
  REQUIRE(p.exited(0));
  return slurp(dir / "whole.log");
}

// Kills the run at each point in turn (each run after the first resumes the
// one before), then resumes it with troupe simulate --resume to its end.
void kill_and_resume(const temp_dir& dir, const std::string& scenario, const std::string& store,
                     const std::vector<std::string>& kill_points) {
  for (std::size_t k = 0; k < kill_points.size(); ++k) {
    std::vector<std::string> argv{TROUPE_KILL_CHILD, scenario, "5", store, dir / "run.log", kill_points[k]};
    if (k > 0) argv.push_back("--resume");
    const auto p = run(argv, dir);
    INFO("killed at " << kill_points[k] << ": " << p.out);
    REQUIRE(p.killed());
  }
  const auto p = simulate(dir, scenario, store, dir / "run.log", true);
  INFO(p.out);
  REQUIRE(p.exited(0));
}

struct turn_count {
  int asked = 0;     // the request's user message
  int finished = 0;  // its final answer
};

// Every agent thread's turns, by request id ("r8/a2", "r8/a2/2", "i4/a7", ...).
std::map<std::string, std::map<std::string, turn_count>> turns(const std::string& store) {
  auto opened = open_store(store);
  REQUIRE(opened.has_value());
  std::map<std::string, std::map<std::string, turn_count>> out;
  for (const std::string& id : opened->threads->list()) {
    if (id.rfind("simulation:", 0) == 0) continue;
    auto t = opened->threads->load(id);
    REQUIRE(t.has_value());
    for (const entry& e : t->entries()) {
      if (e.kind != "message") continue;
      const json::object refs = e.refs.to_json();
      const json::object payload = e.payload.to_json();
      const std::string request(refs.at("request_id").as_string());
      if (payload.at("role") == "user") ++out[id][request].asked;
      if (payload.at("role") == "assistant") ++out[id][request].finished;
    }
  }
  return out;
}

// "r8/a2/2" -> "r8/a2".
std::string first_attempt(const std::string& request) {
  const auto agent = request.find("/a");
  const auto attempt = request.find('/', agent + 2);
  return attempt == std::string::npos ? request : request.substr(0, attempt);
}

// No thread holds a request id twice, and a finished turn is repeated (a
// model call made again) only in the rounds or interviews a kill cut short,
// named by their request ids' beginnings ("r8/", "i4/").
void check_threads(const std::string& store, const std::vector<std::string>& interrupted) {
  for (const auto& [thread, requests] : turns(store)) {
    std::map<std::string, int> finished_by_first_attempt;
    for (const auto& [request, n] : requests) {
      INFO(thread << " " << request);
      CHECK(n.asked == 1);
      CHECK(n.finished <= 1);
      finished_by_first_attempt[first_attempt(request)] += n.finished;
    }
    for (const auto& [request, n] : finished_by_first_attempt) {
      if (n <= 1) continue;
      INFO(thread << " finished " << request << " " << n << " times");
      CHECK(std::any_of(interrupted.begin(), interrupted.end(),
                        [&](const std::string& prefix) { return request.rfind(prefix, 0) == 0; }));
    }
  }
}

}  // namespace

TEST_CASE("a social run killed at any step and resumed writes the uninterrupted run's log") {
  const std::string whole = whole_log(social);
  temp_dir dir;
  const std::string store = "sqlite:" + (dir / "run.db");

  SECTION("killed before round 1 was committed") {
    kill_and_resume(dir, social, store, {"before-round:1"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"r1/"});
  }
  SECTION("killed in round 8, after one agent's turn of it was committed") {
    kill_and_resume(dir, social, store, {"answered:residents-3:default:r8/a2"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"r8/"});
  }
  SECTION("killed after an intervention was logged, before it was committed") {
    kill_and_resume(dir, social, store, {"before-step:2"});
    CHECK(slurp(dir / "run.log") == whole);
  }
  SECTION("killed in an interview, after one answer was committed") {
    kill_and_resume(dir, social, store, {"thread-suffix::interview"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"i4/"});
  }
  SECTION("killed at the checkpoint") {
    kill_and_resume(dir, social, store, {"before-step:5"});
    CHECK(slurp(dir / "run.log") == whole);
  }
  SECTION("killed three times, twice in the same round") {
    kill_and_resume(dir, social, store,
                    {"answered:residents-3:default:r8/a2", "answered:residents-3:default:r8/a2/2", "before-round:20"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"r8/", "r20/"});
  }
}

TEST_CASE("a town hall run (events clock) killed and resumed writes the uninterrupted run's log") {
  const std::string whole = whole_log(town_hall);
  temp_dir dir;
  const std::string store = "sqlite:" + (dir / "run.db");

  SECTION("killed before its first step, an intervention, was committed") {
    kill_and_resume(dir, town_hall, store, {"before-step:1"});
    CHECK(slurp(dir / "run.log") == whole);
  }
  SECTION("killed in round 3, after one agent's turn of it was committed") {
    kill_and_resume(dir, town_hall, store, {"answered:villagers-4:default:r3/a3"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"r3/"});
  }
  SECTION("killed in the interview") {
    kill_and_resume(dir, town_hall, store, {"thread-suffix::interview"});
    CHECK(slurp(dir / "run.log") == whole);
    check_threads(store, {"i3/"});
  }
}

TEST_CASE("a run kept in PostgreSQL, killed and resumed, writes the uninterrupted run's log") {
  testing::postgres_backend pg;
  if (!pg.ready()) {
    std::cout << pg.why_not() << std::endl;
    return;
  }
  pg.store.reset();  // the processes below open their own
  const std::string whole = whole_log(social);
  temp_dir dir;
  // Once in a round, once after an interview was answered but before it was committed.
  kill_and_resume(dir, social, pg.uri(), {"answered:residents-3:default:r8/a2", "before-step:4"});
  CHECK(slurp(dir / "run.log") == whole);
  check_threads(pg.uri(), {"r8/", "i4/"});
}

// The kill a user deals: from outside, wherever the run is, to the troupe
// process itself. The social example with 2,000 people runs for seconds, so
// a kill once the log has passed a share of its final size lands mid-run.
TEST_CASE("troupe simulate killed with SIGKILL from outside, twice, resumes to the uninterrupted run's log") {
  temp_dir dir;
  const std::string scenario = social_of(dir, 2000);

  REQUIRE(simulate(dir, scenario, "sqlite:" + (dir / "whole.db"), dir / "whole.log").exited(0));
  const std::string whole = slurp(dir / "whole.log");
  const std::string store = "sqlite:" + (dir / "run.db");
  const std::string log = dir / "run.log";
  for (const double share : {0.35, 0.7}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
      ::dup2(::open("/dev/null", O_WRONLY), STDERR_FILENO);
      const char* resume = share > 0.5 ? "--resume" : nullptr;  // the first run: the arguments end there
      ::execl(TROUPE_BINARY, TROUPE_BINARY, "simulate", "--scenario", scenario.c_str(), "--seed", "5", "--store",
              store.c_str(), "--events", log.c_str(), resume, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    int status = 0;
    while (fs::exists(log) ? fs::file_size(log) < share * static_cast<double>(whole.size()) : true) {
      REQUIRE(::waitpid(pid, &status, WNOHANG) == 0);  // still running
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    INFO("killed past " << share * 100 << "% of the log");
    REQUIRE(WIFSIGNALED(status));
    CHECK(slurp(log).size() < whole.size());
  }
  const auto p = simulate(dir, scenario, store, log, true);
  INFO(p.out);
  REQUIRE(p.exited(0));
  CHECK(slurp(log) == whole);
  check_threads(store, {"r"});  // which rounds the kills cut short is the machine's to say
}

TEST_CASE("troupe simulate --resume refuses what it cannot continue, and says why") {
  temp_dir dir;
  const std::string store = "sqlite:" + (dir / "run.db");
  const std::string log = dir / "run.log";
  REQUIRE(simulate(dir, social, store, log).exited(0));
  const std::string whole = slurp(log);

  SECTION("without a durable store") {
    const auto p = simulate(dir, social, "", log, true);
    CHECK(p.exited(2));
    CHECK_THAT(p.out, Catch::Contains("--resume continues a run kept in a durable store"));
  }
  SECTION("a scenario of another name") {
    const auto p = simulate(dir, town_hall, store, log, true);
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("nothing to resume: the store holds no run named \"town hall\""));
  }
  SECTION("the same name with another population") {
    const auto p = simulate(dir, social_of(dir, 21), store, log, true);
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("was started with another scenario: its agents was 20, now 21"));
    CHECK(slurp(log) == whole);
  }
  SECTION("another seed") {
    const auto p = simulate(dir, social, store, log, true, "6");
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("its seed was 5, now 6"));
  }
  SECTION("a run that has finished: nothing runs, the log stays as it is") {
    const auto p = simulate(dir, social, store, log, true);
    CHECK(p.exited(0));
    CHECK_THAT(p.out, Catch::Contains("the run had already finished (24 rounds); nothing to resume"));
    CHECK(slurp(log) == whole);
  }
  SECTION("a new run into the store that holds it, without --resume") {
    const auto p = simulate(dir, social, store, dir / "again.log");
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("the store already holds a run named \"town square\""));
  }
}

TEST_CASE("an event log troupe cannot write ends the run with an error that names it") {
  temp_dir dir;
  SECTION("in a directory that does not exist") {
    const auto p = simulate(dir, social, "", dir / "missing/run.log");
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("cannot open the event log " + (dir / "missing/run.log")));
  }
  SECTION("on a full disk") {
    const auto p = simulate(dir, social, "", "/dev/full");
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("cannot write the event log /dev/full: No space left on device"));
  }
  SECTION("once it outgrows what the process may write, rounds into the run") {
    const auto p = run({TROUPE_BINARY, "simulate", "--scenario", social, "--events", dir / "run.log"}, dir, [] {
      const rlimit limit{20000, 20000};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      std::signal(SIGXFSZ, SIG_IGN);  // the write fails instead
    });
    CHECK(p.exited(1));
    CHECK_THAT(p.out, Catch::Contains("cannot write the event log " + (dir / "run.log") + ": File too large"));
  }
}
