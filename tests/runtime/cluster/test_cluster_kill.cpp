// A node process killed with SIGKILL while it commits to a thread of a
// shard it holds: the survivor takes its shards once it is declared dead,
// its thread lease is revoked by the new grant, and nothing it committed is
// lost. A node process paused with SIGSTOP and replaced by a process with
// its node id: continued, it stops serving. Skipped, visibly, without a
// PostgreSQL server.

#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "support/cluster_nodes.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <map>
#include <sstream>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

// The child's stdout, line by line.
struct child {
  pid_t pid = -1;
  int out = -1;
  std::string buffer;

  // The next line, or none once the child's output ended.
  std::optional<std::string> line() {
    for (;;) {
      if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
        std::string l = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        return l;
      }
      char chunk[512];
      const ssize_t n = ::read(out, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // The next line, or none once the output ended or `within` passed.
  std::optional<std::string> line_within(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (buffer.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{out, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[512];
      const ssize_t n = ::read(out, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    return line();
  }

  // Killed and waited for, unless it exited.
  void end() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
    if (out >= 0) ::close(out);
    out = -1;
  }
  ~child() { end(); }
  child() = default;
  child(child&& o) noexcept : pid(std::exchange(o.pid, -1)), out(std::exchange(o.out, -1)), buffer(o.buffer) {}
  child& operator=(child&&) = delete;
};

child start(const std::string& conninfo, const std::string& node_id, const char* mode = nullptr) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::execl(TROUPE_CLUSTER_NODE_CHILD, TROUPE_CLUSTER_NODE_CHILD, conninfo.c_str(), node_id.c_str(), mode,
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  c.out = fds[0];
  return c;
}

}  // namespace

TEST_CASE("a node killed with SIGKILL loses its shards to the survivor, and its thread lease with them") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  child victim = start(db.uri(), "a-victim");
  std::uint64_t shard_epoch = 0, lease_epoch = 0;
  {
    const auto ready = victim.line();
    REQUIRE(ready);
    std::istringstream in(*ready);
    std::string word;
    in >> word >> shard_epoch >> lease_epoch;
    REQUIRE(word == "ready");
  }

  const cluster_options o = test_node(db.uri(), "b-survivor");
  cluster_membership survivor(o);
  // The victim, first by id, keeps its lowest shards, agent-1's among them.
  const std::uint32_t shard = survivor.shard_of("agent-1");
  REQUIRE(shard < 4);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (survivor.shards_held().size() != 4) {
    REQUIRE(std::chrono::steady_clock::now() < until);
    survivor.wait_rounds(1, 1s);
  }

  // Killed mid-commit, a few commits in.
  long committed = 0;
  while (committed < 5) {
    const auto l = victim.line();
    REQUIRE(l);
    if (l->rfind("committed ", 0) == 0) committed = std::stol(l->substr(10));
  }
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(::kill(victim.pid, SIGKILL) == 0);
  int status = 0;
  ::waitpid(victim.pid, &status, 0);
  victim.pid = -1;
  while (const auto l = victim.line())  // what it printed before it died
    if (l->rfind("committed ", 0) == 0) committed = std::stol(l->substr(10));
  victim.end();

  std::optional<shard_lease> taken;
  while (survivor.shards_held().size() != 8) {
    REQUIRE(std::chrono::steady_clock::now() - killed < o.dead_after + 10 * o.heartbeat_interval + 2s);
    survivor.wait_rounds(1, 1s);
  }
  for (const shard_lease& l : survivor.shards_held())
    if (l.shard == shard) taken = l;
  REQUIRE(taken);
  CHECK(taken->epoch > shard_epoch);

  // Nothing it committed is lost; its lease can commit nothing more.
  postgres_store& store = *db.store;
  auto stored = store.load("agent-1");
  REQUIRE(stored);
  CHECK(static_cast<long>(stored->size()) >= committed);
  thread t = std::move(*stored);
  const std::uint64_t rev = t.rev();
  sequential_ids ids;
  t.append(note(1000), wall_clock_ms(), ids);
  const auto stale = store.append_fenced(t, rev, thread_lease{"a-victim", lease_epoch, wall_clock_ms() + 3'600'000});
  REQUIRE(!stale);
  CHECK(stale.error().type == "fenced");

  const auto mine = store.acquire_lease_in_shard("agent-1", "b-survivor", *taken, wall_clock_ms(), 1h);
  REQUIRE(mine);
  CHECK(store.append_fenced(t, rev, *mine));
}

namespace {

// A "held S:E …" line of a watching child, as shard → epoch; none for
// another line.
std::optional<std::map<std::uint32_t, std::uint64_t>> held_in(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "held") return std::nullopt;
  std::map<std::uint32_t, std::uint64_t> out;
  while (in >> word) {
    const auto colon = word.find(':');
    out[static_cast<std::uint32_t>(std::stoul(word.substr(0, colon)))] = std::stoull(word.substr(colon + 1));
  }
  return out;
}

// A watching child's incarnation, then what it holds once it holds `count`
// shards.
std::map<std::uint32_t, std::uint64_t> watch_until_holding(child& c, std::size_t count, std::string& incarnation) {
  const auto first = c.line_within(10s);
  REQUIRE(first);
  REQUIRE(first->rfind("incarnation ", 0) == 0);
  incarnation = first->substr(12);
  for (;;) {
    const auto l = c.line_within(10s);
    REQUIRE(l);
    const auto held = held_in(*l);
    if (held && held->size() == count) return *held;
  }
}

}  // namespace

TEST_CASE("a node process paused past dead_after and replaced by one with its id stops serving when continued") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  const cluster_options o = test_node(db.uri(), "twin");
  std::string paused_incarnation, fresh_incarnation;
  child paused = start(db.uri(), "twin", "watch");
  const auto paused_held = watch_until_holding(paused, 8, paused_incarnation);

  REQUIRE(::kill(paused.pid, SIGSTOP) == 0);
  // Silent past dead_after, by the database's clock: another process may
  // take its id.
  REQUIRE(eventually([&] {
    for (const node_info& n : read_cluster_status(db.uri()).nodes)
      if (n.id == "twin") return n.heartbeat_age > o.dead_after;
    return false;
  }));
  child fresh = start(db.uri(), "twin", "watch");
  const auto fresh_held = watch_until_holding(fresh, 8, fresh_incarnation);
  CHECK(fresh_incarnation != paused_incarnation);
  // Granted anew, not adopted at the paused process's epochs.
  for (const auto& [shard, epoch] : fresh_held) CHECK(epoch > paused_held.at(shard));

  REQUIRE(::kill(paused.pid, SIGCONT) == 0);
  // Continued, it holds nothing from then on, and stops.
  bool superseded = false;
  while (!superseded) {
    const auto l = paused.line_within(10s);
    REQUIRE(l);
    if (*l == "superseded")
      superseded = true;
    else if (const auto held = held_in(*l))
      CHECK(held->empty());
  }
  int status = 0;
  REQUIRE(::waitpid(paused.pid, &status, 0) == paused.pid);
  paused.pid = -1;
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  // Every shard is the fresh process's alone, under its live grants.
  db.sql([&](PGconn* c) {
    PGresult* r =
        PQexecParams(c,
                     "SELECT count(*) FROM troupe_shards WHERE holder = 'twin' AND holder_incarnation = $1 "
                     "AND lease_until > now()",
                     1, nullptr, std::array<const char*, 1>{fresh_incarnation.c_str()}.data(), nullptr, nullptr, 0);
    REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
    CHECK(std::string(PQgetvalue(r, 0, 0)) == "8");
    PQclear(r);
  });
}
