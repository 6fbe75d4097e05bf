// Kills a process running an agent on a SQLite file with SIGKILL at random
// moments, again and again, and checks after each kill what the file holds.

#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

using namespace troupe;

namespace {

struct child {
  pid_t pid = -1;
  int out = -1;
  std::string buffer;

  // Reads lines until one says "committed N"; returns N, or -1 if the child ended.
  long next_commit() {
    for (;;) {
      const auto nl = buffer.find('\n');
      if (nl != std::string::npos) {
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.rfind("committed ", 0) == 0) return std::stol(line.substr(10));
        continue;
      }
      char chunk[256];
      const ssize_t n = ::read(out, chunk, sizeof chunk);
      if (n <= 0) return -1;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }
};

child start(const std::string& db) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::execl(TROUPE_CRASH_CHILD, TROUPE_CRASH_CHILD, db.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  c.out = fds[0];
  return c;
}

void kill_now(child& c) {
  ::kill(c.pid, SIGKILL);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  ::close(c.out);
}

}  // namespace

TEST_CASE("a process killed at random moments loses no committed entry and recovers its thread") {
  const auto db = std::filesystem::temp_directory_path() / ("troupe-crash-" + std::to_string(::getpid()) + ".db");
  std::mt19937 rng(2026);
  std::size_t committed = 0;  // the largest size a child reported after a reply
  std::size_t turns_seen = 0;

  for (int round = 0; round < 25; ++round) {
    INFO("round " << round);
    child c = start(db.string());
    // Let it finish a few turns, then kill it somewhere in the middle of the next.
    const int turns = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < turns; ++i) {
      const long n = c.next_commit();
      REQUIRE(n > 0);
      REQUIRE(static_cast<std::size_t>(n) >= committed);  // nothing committed was lost on restart
      committed = static_cast<std::size_t>(n);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));  // a random moment, not a wait
    kill_now(c);

    sqlite_store store(db.string());
    auto t = store.load("crash:default");
    REQUIRE(t);  // restore() checks that seq runs 0, 1, 2, … without gaps
    CHECK(t->size() >= committed);
    std::set<std::string> ids;
    for (const entry& e : t->entries()) CHECK(ids.insert(e.id).second);  // no duplicate
    // Every tool call has at most one result; only the last request's may lack one.
    std::map<std::pair<std::string, std::string>, int> results;
    std::string last_request;
    for (const entry& e : t->entries()) {
      const auto key = std::make_pair(std::string(string_field(e.refs, "call_id").value_or("")),
                                      std::string(string_field(e.refs, "tool_call_id").value_or("")));
      if (e.kind == "tool_result") ++results[key];
      if (e.kind == "message" && e.payload.at("role") == "user")
        last_request = std::string(string_field(e.refs, "request_id").value_or(""));
    }
    for (const entry* call : t->of_kind("tool_call")) {
      const auto key = std::make_pair(std::string(string_field(call->refs, "call_id").value_or("")),
                                      std::string(string_field(call->refs, "tool_call_id").value_or("")));
      CHECK(results[key] <= 1);
      if (results[key] == 0) CHECK(string_field(call->refs, "request_id") == last_request);
    }
    std::size_t user_turns = 0;
    for (const entry* e : t->of_kind("message"))
      if (e->payload.at("role") == "user") {
        ++user_turns;
        CHECK(string_field(e->payload, "content") ==
              "turn " + std::to_string(user_turns));  // the conversation continues
      }
    CHECK(user_turns >= turns_seen);
    turns_seen = user_turns;
  }

  // One last run: the agent repairs what the last kill left and goes on.
  child c = start(db.string());
  REQUIRE(c.next_commit() > 0);
  kill_now(c);
  sqlite_store store(db.string());
  auto t = store.load("crash:default");
  REQUIRE(t);
  std::map<std::pair<std::string, std::string>, int> results;
  for (const entry* r : t->of_kind("tool_result"))
    ++results[{std::string(string_field(r->refs, "call_id").value_or("")),
               std::string(string_field(r->refs, "tool_call_id").value_or(""))}];
  std::size_t unanswered = 0;
  for (const entry* call : t->of_kind("tool_call"))
    unanswered += results[{std::string(string_field(call->refs, "call_id").value_or("")),
                           std::string(string_field(call->refs, "tool_call_id").value_or(""))}] == 0;
  CHECK(unanswered <= 2);  // at most the two calls of the turn this last kill interrupted
  CHECK(turns_seen > 25);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
}
