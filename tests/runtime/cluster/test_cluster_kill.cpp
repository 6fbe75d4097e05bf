// A node process killed with SIGKILL while it commits to a thread of a
// shard it holds: the survivor takes its shards once it is declared dead,
// its thread lease is revoked by the new grant, and nothing it committed is
// lost. Skipped, visibly, without a PostgreSQL server.

#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "support/cluster_nodes.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
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
};

child start(const std::string& conninfo, const std::string& node_id) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::execl(TROUPE_CLUSTER_NODE_CHILD, TROUPE_CLUSTER_NODE_CHILD, conninfo.c_str(), node_id.c_str(),
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
  while (const auto l = victim.line())  // what it printed before it died
    if (l->rfind("committed ", 0) == 0) committed = std::stol(l->substr(10));
  ::close(victim.out);

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
