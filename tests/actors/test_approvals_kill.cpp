// A process paused on an approval is killed with SIGKILL; a new runtime on
// the same store takes the decision. Each tool ran exactly once over both
// processes, and the model call that asked for them was not made again.

#include "runtime/store/open_store.hpp"
#include "support/approvals_kill_agent.hpp"
#include "support/runtime_harness.hpp"
#include "support/store_backends.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

using namespace troupe;
using namespace troupe::testing;

namespace {

// Runs the child on `uri` until it says it paused, then kills it with SIGKILL.
bool pause_then_kill(const std::string& uri, const std::string& log) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::execl(TROUPE_APPROVALS_KILL_CHILD, TROUPE_APPROVALS_KILL_CHILD, uri.c_str(), log.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[64];
  while (out.find("paused\n") == std::string::npos) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  INFO("the child said: " << out);
  return out.find("paused\n") != std::string::npos && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

std::map<std::string, int> runs_in(const std::string& log) {
  std::map<std::string, int> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++out[line];
  return out;
}

void killed_between_pause_and_decision(const std::string& uri) {
  const std::string log =
      (std::filesystem::temp_directory_path() / ("troupe-approvals-runs-" + unique_suffix())).string();
  REQUIRE(pause_then_kill(uri, log));
  CHECK(runs_in(log) == std::map<std::string, int>{{"search", 1}});

  auto store = open_store(uri);
  REQUIRE(store.has_value());
  auto model = search_and_send_model();
  runtime rt({.provider = model, .store = store->threads, .owner_id = kill_test_owner});
  add_logged_tools(rt, log);
  agent a = rt.spawn_agent(kill_test_agent());
  decision d;
  d.request_id = "r1";
  d.tool_call_id = "s2";
  d.answer = verdict::approve;
  d.decided_by = "ada";
  CHECK(answer_of(must_reply(a.decide(d))) == "done: send ran");
  CHECK(runs_in(log) == std::map<std::string, int>{{"search", 1}, {"send", 1}});
  CHECK(model->calls() == 1);  // the answer; not the call that asked for the tools
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 2);
  CHECK(results[0]->payload.at("result") == "search ran");  // committed before the kill, not interrupted
  std::filesystem::remove(log);
}

}  // namespace

TEST_CASE("killed with SIGKILL while paused, on SQLite: the decision after it runs each tool once") {
  const auto db = std::filesystem::temp_directory_path() / ("troupe-approvals-kill-" + unique_suffix() + ".db");
  killed_between_pause_and_decision("sqlite:" + db.string());
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
}

TEST_CASE("killed with SIGKILL while paused, on PostgreSQL: the decision after it runs each tool once") {
  postgres_backend pg;
  if (!pg.ready()) {
    std::cout << pg.why_not() << std::endl;
    return;
  }
  killed_between_pause_and_decision(pg.uri());
}
