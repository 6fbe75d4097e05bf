// A cluster of nodes kept in PostgreSQL: membership, fair shares of the
// shards, handover, failover and the fencing of a stale holder's commits.
// Nodes are cluster_membership objects in this process, each with its own
// connections; a killed node is one halted (its rounds stop, nothing is
// given up). Time passes by waiting for conditions, never for fixed spells.
// Skipped, visibly, without a server.

#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/cluster/detail/cluster_tables.hpp"
#include "runtime/cluster/shard_of.hpp"
#include "runtime/store/postgres/detail/migrations.hpp"
#include "support/cluster_nodes.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t test_shards = 8;

cluster_options node(const postgres_backend& db, const std::string& id, std::uint32_t shards = test_shards) {
  return test_node(db.uri(), id, shards);
}

std::set<std::uint32_t> shard_numbers(const cluster_membership& m) {
  std::set<std::uint32_t> out;
  for (const shard_lease& l : m.shards_held()) out.insert(l.shard);
  return out;
}

std::optional<shard_lease> held(const cluster_membership& m, std::uint32_t shard) {
  for (const shard_lease& l : m.shards_held())
    if (l.shard == shard) return l;
  return std::nullopt;
}

const node_info* find_node(const std::vector<node_info>& nodes, const std::string& id) {
  for (const node_info& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

// Each node's count of shards, in the order given, once they add up to all.
bool shares_are(const std::vector<const cluster_membership*>& nodes, const std::vector<std::size_t>& expected) {
  std::set<std::uint32_t> all;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto mine = shard_numbers(*nodes[i]);
    if (mine.size() != expected[i]) return false;
    all.insert(mine.begin(), mine.end());
  }
  return all.size() == test_shards;
}

// The shards a membership reports lost, as its hook hands them over (on the
// membership's thread).
class recorded_losses {
 public:
  cluster_hooks hooks() {
    cluster_hooks h;
    h.lost = [this](const shard_lease& l) {
      std::lock_guard lock(m_);
      lost_.push_back(l);
    };
    return h;
  }
  std::size_t count() const {
    std::lock_guard lock(m_);
    return lost_.size();
  }
  std::vector<shard_lease> all() const {
    std::lock_guard lock(m_);
    return lost_;
  }

 private:
  mutable std::mutex m_;
  std::vector<shard_lease> lost_;
};

}  // namespace

TEST_CASE("an agent's shard is FNV-1a 64 of its id modulo the shard count, the same in every build") {
  CHECK(fnv1a_64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a_64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(shard_of("agent-1", 64) == 0);
  CHECK(shard_of("support-bot", 64) == 36);
  CHECK(shard_of("user/42", 1024) == 225);
}

TEST_CASE("cluster options that cannot work are refused before anything connects") {
  cluster_options o;
  o.conninfo = "postgres://nowhere.invalid/db";
  auto refusal = [&] {
    try {
      validate(o);
    } catch (const cluster_error& e) {
      CHECK(e.which() == cluster_error::kind::invalid_options);
      return std::string(e.what());
    }
    return std::string();
  };
  SECTION("no shards") {
    o.shards = 0;
    CHECK_THAT(refusal(), Catch::Contains("shard count"));
  }
  SECTION("declared dead between two heartbeats") {
    o.dead_after = o.heartbeat_interval;
    CHECK_THAT(refusal(), Catch::Contains("dead_after"));
  }
  SECTION("a shard lease that runs out between two renewals") {
    o.shard_lease_ttl = o.heartbeat_interval / 2;
    CHECK_THAT(refusal(), Catch::Contains("ttl"));
  }
  SECTION("no database") {
    o.conninfo.clear();
    CHECK_THAT(refusal(), Catch::Contains("conninfo"));
  }
}

TEST_CASE("a node joins, heartbeats and becomes active; a made-up id names its process") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  cluster_options o = node(db, "");
  cluster_membership a(o);
  CHECK_THAT(a.node_id(), Catch::Contains("/" + std::to_string(getpid()) + "/"));
  REQUIRE(eventually([&] {
    const auto nodes = a.nodes();
    const node_info* me = find_node(nodes, a.node_id());
    return me && me->state == node_state::active;
  }));
  const auto first = a.nodes();
  const node_info* me = find_node(first, a.node_id());
  REQUIRE(me);
  CHECK(me->address == ".test:7000");  // node() names it after the id it was given: none
  CHECK(me->build_id == "test-build");
  CHECK(me->heartbeat_age < o.dead_after);
  // It keeps beating: a while later its heartbeat is still fresh.
  REQUIRE(a.wait_rounds(10, 10s));
  CHECK(find_node(a.nodes(), a.node_id())->heartbeat_age < o.dead_after);
  CHECK(!a.last_error());
}

TEST_CASE("a node configured with another shard count is refused with both counts named") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  cluster_membership a(node(db, "a"));
  try {
    cluster_membership b(node(db, "b", 16));
    FAIL("a node with 16 shards joined a cluster of 8");
  } catch (const cluster_error& e) {
    CHECK(e.which() == cluster_error::kind::shard_count);
    CHECK_THAT(e.what(), Catch::Contains("16") && Catch::Contains("8"));
  }
}

TEST_CASE("a second live node with the same id is refused") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  cluster_membership a(node(db, "a"));
  REQUIRE(a.wait_rounds(1, 10s));
  try {
    cluster_membership again(node(db, "a"));
    FAIL("two live nodes share an id");
  } catch (const cluster_error& e) {
    CHECK(e.which() == cluster_error::kind::node_id_taken);
  }
}

TEST_CASE("nodes take fair shares of the shards: all with one, 4+4 with two, 3+3+2 with three") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::mutex m;
  std::map<std::string, int> acquired;
  auto counting = [&](const std::string& id) {
    cluster_hooks h;
    h.acquired = [&, id](const shard_lease&) {
      std::lock_guard lock(m);
      ++acquired[id];
    };
    return h;
  };
  cluster_membership a(node(db, "a"), counting("a"));
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  {
    std::lock_guard lock(m);
    CHECK(acquired["a"] == 8);
  }

  cluster_membership b(node(db, "b"), counting("b"));
  REQUIRE(eventually([&] { return shares_are({&a, &b}, {4, 4}); }));

  cluster_membership c(node(db, "c"), counting("c"));
  // The first shards%nodes nodes by id take one more.
  REQUIRE(eventually([&] { return shares_are({&a, &b, &c}, {3, 3, 2}); }));

  // The table agrees, and every location points at its holder.
  const cluster_status status = read_cluster_status(db.uri());
  CHECK(status.shards == test_shards);
  REQUIRE(status.nodes.size() == 3);
  for (const shard_info& s : status.shard_table) {
    const cluster_membership* holder = s.holder == "a" ? &a : s.holder == "b" ? &b : &c;
    const auto mine = held(*holder, s.shard);
    REQUIRE(mine);
    CHECK(mine->epoch == s.epoch);
    CHECK(s.lease_left.count() > 0);
  }
  for (const std::string agent : {"agent-1", "support-bot", "user/42"}) {
    const auto where = b.locate(agent);
    REQUIRE(where);
    const cluster_membership* holder = where->node_id == "a" ? &a : where->node_id == "b" ? &b : &c;
    CHECK(held(*holder, shard_of(agent, test_shards)));
    CHECK(where->address == where->node_id + ".test:7000");
  }
}

TEST_CASE("a node that leaves drains each shard before it gives it up, and the others take it") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::mutex m;
  std::vector<std::string> log;  // "drain S" by a, "acquired S" by b, in order
  std::vector<std::string> held_when_drained;
  cluster_hooks a_hooks;
  a_hooks.drain = [&](const shard_lease& l, std::function<void()> drained) {
    // Still a's in the table while it drains.
    db.sql([&](PGconn* c) {
      PGresult* r = PQexec(c, ("SELECT holder FROM troupe_shards WHERE shard = " + std::to_string(l.shard)).c_str());
      std::lock_guard lock(m);
      held_when_drained.push_back(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
      log.push_back("drain " + std::to_string(l.shard));
      PQclear(r);
    });
    // Drained later, from another thread, as a runtime stopping agents would.
    std::thread([drained] { drained(); }).detach();
  };
  cluster_hooks b_hooks;
  b_hooks.acquired = [&](const shard_lease& l) {
    std::lock_guard lock(m);
    log.push_back("acquired " + std::to_string(l.shard));
  };
  cluster_membership a(node(db, "a"), a_hooks);
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  cluster_membership b(node(db, "b"), b_hooks);
  REQUIRE(eventually([&] { return shares_are({&a, &b}, {4, 4}); }));

  REQUIRE(a.leave(10s));
  REQUIRE(eventually([&] { return shares_are({&b}, {8}); }));
  CHECK(a.shards_held().empty());
  CHECK(!find_node(b.nodes(), "a"));  // its row is gone

  std::lock_guard lock(m);
  CHECK(held_when_drained == std::vector<std::string>(8, "a"));
  // Every shard b got from a was drained by a first.
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind("acquired ", 0) != 0) continue;
    const std::string shard = log[i].substr(9);
    const bool from_a = std::find(log.begin(), log.end(), "drain " + shard) != log.end();
    if (from_a)
      CHECK(std::find(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(i), "drain " + shard) !=
            log.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

TEST_CASE("a node that stops heartbeating is declared dead and its shards move to the survivors in time") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  const cluster_options o = node(db, "a");
  cluster_membership a(o);
  cluster_membership b(node(db, "b"));
  cluster_membership c(node(db, "c"));
  REQUIRE(eventually([&] { return shares_are({&a, &b, &c}, {3, 3, 2}); }));
  const std::uint64_t a_epoch = a.shards_held().front().epoch;
  const std::uint32_t a_shard = a.shards_held().front().shard;

  const auto killed = std::chrono::steady_clock::now();
  a.halt();  // as SIGKILL: nothing given up
  // dead_after, then a round of a survivor to see it and one to take.
  REQUIRE(eventually([&] { return shares_are({&b, &c}, {4, 4}); }));
  const auto moved = std::chrono::steady_clock::now() - killed;
  CHECK(moved < o.dead_after + 10 * o.heartbeat_interval + 2s);
  const node_info* dead = find_node(b.nodes(), "a");
  REQUIRE(dead);
  CHECK(dead->state == node_state::dead);
  const auto taken = held(b, a_shard) ? held(b, a_shard) : held(c, a_shard);
  REQUIRE(taken);
  CHECK(taken->epoch > a_epoch);
}

TEST_CASE("a holder learns that its shard was taken, and says so once") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  recorded_losses lost;
  cluster_membership a(node(db, "a"), lost.hooks());
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  const shard_lease before = *held(a, 3);
  // Another grant of shard 3, as a node that judged a dead would make it.
  db.sql([](PGconn* c) {
    PQclear(PQexec(c, "INSERT INTO troupe_nodes VALUES ('z', 'z:1', 'x', 'active', now(), now() + interval '1 hour')"));
    PQclear(PQexec(c, "UPDATE troupe_shards SET holder = 'z', epoch = epoch + 1 WHERE shard = 3"));
  });
  REQUIRE(eventually([&] { return lost.count() > 0; }));
  REQUIRE(a.wait_rounds(3, 10s));
  const std::vector<shard_lease> seen = lost.all();
  REQUIRE(seen.size() == 1);
  CHECK(seen.front() == before);
  CHECK(!held(a, 3));
}

TEST_CASE("a stale holder's commits are refused as fenced once its shard is taken over") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  postgres_store& store = *db.store;
  const std::string agent = "support-bot";
  const std::uint32_t shard = shard_of(agent, test_shards);
  sequential_ids ids;
  thread t(agent, 1);

  auto a = std::make_unique<cluster_membership>(node(db, "a"));
  REQUIRE(eventually([&] { return held(*a, shard).has_value(); }));
  const shard_lease a_shard = *held(*a, shard);
  // A long thread lease: the takeover must not wait for it to run out.
  const auto a_lease = store.acquire_lease_in_shard(agent, "a", a_shard, wall_clock_ms(), 1h);
  REQUIRE(a_lease);
  t.append(note(1), 1, ids);
  REQUIRE(store.append_fenced(t, 0, *a_lease));

  SECTION("a node that does not hold the shard cannot take the thread's lease") {
    const auto refused =
        store.acquire_lease_in_shard(agent, "b", shard_lease{shard, "b", a_shard.epoch}, wall_clock_ms(), 1h);
    REQUIRE(!refused);
    CHECK(refused.error().type == "fenced");
    CHECK_THAT(refused.error().message, Catch::Contains("shard " + std::to_string(shard)));
  }
  SECTION("another owner under the same grant is told the thread is owned") {
    const auto refused = store.acquire_lease_in_shard(agent, "a-other", a_shard, wall_clock_ms(), 1h);
    REQUIRE(!refused);
    CHECK(refused.error().type == "owned");
  }
  SECTION("after the holder dies, the new holder's grant fences it at once") {
    a->halt();
    cluster_membership b(node(db, "b"));
    REQUIRE(eventually([&] { return held(b, shard).has_value(); }));
    const shard_lease b_shard = *held(b, shard);
    CHECK(b_shard.epoch > a_shard.epoch);

    // The grant revoked a's thread lease: a's next commit is refused, and
    // nothing of it is written.
    t.append(note(2), 2, ids);
    const auto stale = store.append_fenced(t, 1, *a_lease);
    REQUIRE(!stale);
    CHECK(stale.error().type == "fenced");
    CHECK(store.load(agent)->size() == 1);
    // a can no longer take it back under its old grant either.
    CHECK(store.acquire_lease_in_shard(agent, "a", a_shard, wall_clock_ms(), 1h).error().type == "fenced");

    const auto b_lease = store.acquire_lease_in_shard(agent, "b", b_shard, wall_clock_ms(), 1h);
    REQUIRE(b_lease);
    CHECK(b_lease->epoch > a_lease->epoch);
    REQUIRE(store.append_fenced(t, 1, *b_lease));
    CHECK(store.load(agent)->size() == 2);
  }
  SECTION("a take under a newer grant wins over a live lease taken under an older one") {
    // The grant's own revocation is bypassed: the newer grant is written by
    // hand, as a take that raced the revocation would see it.
    a->halt();
    db.sql([&](PGconn* c) {
      PQclear(PQexec(c, "INSERT INTO troupe_nodes VALUES ('b', 'b:1', 'x', 'active', now(), now())"));
      PQclear(PQexec(c, ("UPDATE troupe_shards SET holder = 'b', epoch = epoch + 1, lease_until = now() + "
                         "interval '1 hour' WHERE shard = " +
                         std::to_string(shard))
                            .c_str()));
    });
    const auto b_lease =
        store.acquire_lease_in_shard(agent, "b", shard_lease{shard, "b", a_shard.epoch + 1}, wall_clock_ms(), 1h);
    REQUIRE(b_lease);
    t.append(note(2), 2, ids);
    CHECK(store.append_fenced(t, 1, *a_lease).error().type == "fenced");
  }
}

TEST_CASE("a drain that never answers gives its shard up after the drain timeout") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::atomic<int> drains{0};
  cluster_hooks stuck;
  stuck.drain = [&](const shard_lease&, std::function<void()>) { ++drains; };  // never drained
  cluster_options o = node(db, "a");
  o.drain_timeout = 300ms;
  cluster_membership a(o, stuck);
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  cluster_membership b(node(db, "b"));
  REQUIRE(eventually([&] { return shares_are({&a, &b}, {4, 4}); }));
  CHECK(drains == 4);
}

TEST_CASE("a dead node's row is forgotten forget_dead_after past its last heartbeat") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  cluster_membership a(node(db, "a"));
  cluster_options o = node(db, "b");
  o.forget_dead_after = 1500ms;
  cluster_membership b(o);
  REQUIRE(eventually([&] { return shares_are({&a, &b}, {4, 4}); }));
  a.halt();
  REQUIRE(eventually([&] {
    const auto nodes = b.nodes();
    const node_info* n = find_node(nodes, "a");
    return n && n->state == node_state::dead;
  }));
  REQUIRE(eventually([&] { return !find_node(b.nodes(), "a"); }));
}

TEST_CASE("a live node declared dead drops its shards, joins again and takes them under new epochs") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  recorded_losses lost;
  cluster_membership a(node(db, "a"), lost.hooks());
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  const std::vector<shard_lease> before = a.shards_held();
  // As a survivor would judge a node paused past dead_after.
  db.sql([](PGconn* c) { PQclear(PQexec(c, "UPDATE troupe_nodes SET state = 'dead' WHERE id = 'a'")); });
  REQUIRE(eventually([&] { return lost.count() == 8; }));
  REQUIRE(eventually([&] { return shares_are({&a}, {8}); }));
  for (const shard_lease& l : before) CHECK(held(a, l.shard)->epoch > l.epoch);
  // Joining again, then active from its next heartbeat.
  CHECK(eventually([&] {
    const auto nodes = a.nodes();
    return find_node(nodes, "a") && find_node(nodes, "a")->state == node_state::active;
  }));
  const cluster_counters counted = a.counters();
  CHECK(counted.lost == 8);
  CHECK(counted.acquired == 16);
  CHECK(counted.released == 0);
  CHECK(counted.failed_rounds == 0);
}

namespace {

// One statement on `c`, which must succeed; its first value, if any.
std::string exec(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const auto status = PQresultStatus(r);
  const std::string error = PQerrorMessage(c);
  const std::string first = status == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
  PQclear(r);
  INFO(sql << ": " << error);
  REQUIRE((status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK));
  return first;
}

// A cluster of 8 shards as the tables hold it, shard 0 granted at epoch 1
// to "old", a node declared dead, under a lease an hour long: a node may
// take it, and "old" may still take thread leases under its grant.
void old_holds_shard_0(PGconn* c) {
  exec(c, "INSERT INTO troupe_cluster (shards) VALUES (8)");
  exec(c, "INSERT INTO troupe_shards (shard) SELECT generate_series(0, 7)");
  exec(c,
       "INSERT INTO troupe_nodes (id, address, build_id, state, started_at, heartbeat_at) "
       "VALUES ('old', 'old:1', 'x', 'dead', now(), now())");
  exec(c,
       "UPDATE troupe_shards SET holder = 'old', epoch = 1, lease_until = now() + interval '1 hour' WHERE shard = 0");
}

// A connection of the test's own, closed at the end of its scope.
struct connection {
  explicit connection(const std::string& uri) : c(PQconnectdb(uri.c_str())) { REQUIRE(PQstatus(c) == CONNECTION_OK); }
  ~connection() { PQfinish(c); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  PGconn* c;
};

}  // namespace

TEST_CASE("a paused node replaced by a process with its node id holds nothing once it goes on, and stops") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  // The first membership's thread is held in its first acquired hook, as a
  // SIGSTOP would hold the process: no round of it runs until let go.
  std::mutex m;
  std::condition_variable resumed;
  bool go = false;
  std::atomic<bool> paused{false};
  auto let_go = [&] {
    {
      std::lock_guard lock(m);
      go = true;
    }
    resumed.notify_all();
  };
  struct at_end {
    std::function<void()> f;
    ~at_end() { f(); }
  } let_go_at_end{let_go};
  recorded_losses lost;
  cluster_hooks hooks = lost.hooks();
  hooks.acquired = [&](const shard_lease&) {
    if (paused.exchange(true)) return;
    std::unique_lock lock(m);
    resumed.wait(lock, [&] { return go; });
  };
  const cluster_options o = node(db, "twin");
  cluster_membership first(o, hooks);
  REQUIRE(eventually([&] { return paused.load(); }));
  const std::vector<shard_lease> first_held = first.shards_held();
  REQUIRE(first_held.size() == test_shards);
  REQUIRE(eventually([&] {
    const auto nodes = first.nodes();
    return find_node(nodes, "twin") && find_node(nodes, "twin")->heartbeat_age > o.dead_after;
  }));

  cluster_membership second(node(db, "twin"));
  CHECK(second.incarnation() != first.incarnation());
  REQUIRE(eventually([&] { return shares_are({&second}, {8}); }));
  const std::vector<shard_lease> second_held = second.shards_held();
  // Granted anew, not adopted at the paused one's epochs.
  for (std::size_t i = 0; i < test_shards; ++i) CHECK(second_held[i].epoch > first_held[i].epoch);

  let_go();
  REQUIRE(eventually([&] { return first.superseded(); }));
  CHECK(first.shards_held().empty());
  CHECK(lost.count() == test_shards);
  CHECK(!first.wait_rounds(1, 1s));  // its rounds stopped
  // The second's grants and row are untouched by the first's last round.
  REQUIRE(second.wait_rounds(2, 10s));
  CHECK(second.shards_held() == second_held);
  CHECK(!second.superseded());
  const auto nodes = second.nodes();
  REQUIRE(find_node(nodes, "twin"));
  CHECK(find_node(nodes, "twin")->state == node_state::active);
  CHECK(find_node(nodes, "twin")->shards_held == test_shards);
  CHECK(!second.last_error());
}

TEST_CASE("a thread lease taken under the old grant while the new grant waited for the shard is revoked by it") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  postgres_store& store = *db.store;
  db.sql([](PGconn* c) {
    old_holds_shard_0(c);
    // A thread whose lease row is there from before, revoked by a grant of old.
    exec(c,
         "INSERT INTO leases (thread_id, owner, epoch, expires_at, shard, shard_epoch) "
         "VALUES ('known', '', 3, 0, 0, 0)");
  });
  const shard_lease old_grant{0, "old", 1};
  connection old_side(db.uri()), new_side(db.uri()), watcher(db.uri());
  const std::string new_pid = exec(new_side.c, "SELECT pg_backend_pid()");

  // The old holder takes two thread leases in a transaction of its own,
  // which holds the shard's row (FOR SHARE) until it commits.
  exec(old_side.c, "BEGIN");
  std::map<std::string, std::uint64_t> old_epochs;
  for (const std::string thread_id : {"late", "known"})
    old_epochs[thread_id] =
        std::stoull(exec(old_side.c, "SELECT held_epoch FROM troupe_take_lease_in_shard('" + thread_id +
                                         "', 'old', 0, 'old', 1, 0, 9000000000000) WHERE status = 'taken'"));

  // The new grant, in a transaction of its own, waits for that row.
  std::optional<cluster::shard_taken> taken;
  std::string failure;
  std::thread granting([&] {
    try {
      exec(new_side.c, "BEGIN");
      taken = cluster::take_shard(new_side.c, 0, "new", "new-incarnation", 1, 1h);
      exec(new_side.c, "COMMIT");
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  const bool waited =
      eventually([&] { return exec(watcher.c, "SELECT cardinality(pg_blocking_pids(" + new_pid + "))") != "0"; });
  exec(old_side.c, "COMMIT");
  granting.join();
  REQUIRE(waited);
  REQUIRE(failure.empty());
  REQUIRE(taken);
  CHECK(taken->epoch == 2);
  CHECK(taken->revoked_leases == 2);

  // Both leases are revoked: the old holder commits nothing more under them.
  sequential_ids ids;
  for (const std::string thread_id : {"late", "known"}) {
    thread t(thread_id, 1);
    t.append(note(1), 1, ids);
    const auto stale = store.append_fenced(t, 0, thread_lease{"old", old_epochs[thread_id], 9'000'000'000'000});
    REQUIRE(!stale);
    CHECK(stale.error().type == "fenced");
  }
  CHECK(store.acquire_lease_in_shard("late", "old", old_grant, wall_clock_ms(), 1h).error().type == "fenced");
}

TEST_CASE("a take rewrites only the thread leases still held, however many the shard ever had") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  constexpr int gone = 10'000;
  db.sql([&](PGconn* c) {
    old_holds_shard_0(c);
    // Leases of threads long moved on, revoked by earlier grants...
    exec(c,
         "INSERT INTO leases (thread_id, owner, epoch, expires_at, shard, shard_epoch) "
         "SELECT 'gone-' || g, '', 2, 0, 0, 1 FROM generate_series(1, " +
             std::to_string(gone) + ") g");
    // ...and three still held under the old grant, one of them given up by
    // its owner (who still names it).
    exec(c,
         "INSERT INTO leases (thread_id, owner, epoch, expires_at, shard, shard_epoch) VALUES "
         "('held-1', 'old', 5, 9000000000000, 0, 1), ('held-2', 'old', 5, 9000000000000, 0, 1), "
         "('released', 'old', 5, 0, 0, 1)");
    exec(c, "ANALYZE leases");
  });
  connection c(db.uri());
  const auto first = cluster::take_shard(c.c, 0, "new", "new-incarnation", 1, 1h);
  REQUIRE(first);
  CHECK(first->revoked_leases == 3);
  CHECK(exec(c.c, "SELECT count(*) FROM leases WHERE owner = '' AND epoch = 6") == "3");
  // The revoked ones were left as they were, not rewritten again.
  CHECK(exec(c.c, "SELECT count(*) FROM leases WHERE thread_id LIKE 'gone-%' AND epoch = 2") == std::to_string(gone));

  // The next take has nothing left to revoke.
  const auto second = cluster::take_shard(c.c, 0, "newer", "newer-incarnation", first->epoch, 1h);
  REQUIRE(second);
  CHECK(second->revoked_leases == 0);
  CHECK(exec(c.c, "SELECT count(*) FROM leases WHERE epoch = 6") == "3");
}

TEST_CASE("a cluster's database of schema 10 is upgraded in place, and its grants and leases carry on") {
  postgres_backend db({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(db);
  // As nodes of a troupe of schema 10 left it: "old" holds every shard at
  // epoch 3 and has not heartbeat for a minute; it holds one thread lease.
  db.sql([](PGconn* c) {
    postgres::migrate(c, 10);
    exec(c, "INSERT INTO troupe_cluster (shards) VALUES (8)");
    exec(c, "INSERT INTO troupe_nodes VALUES ('old', 'old:1', 'x', 'active', now(), now() - interval '1 minute')");
    exec(c, "INSERT INTO troupe_shards SELECT g, 'old', 3, now() + interval '1 hour' FROM generate_series(0, 7) g");
    exec(c, "INSERT INTO leases VALUES ('t', 'old', 4, 9000000000000, 0, 3), ('r', '', 5, 0, 0, 2)");
  });
  db.reopen();
  db.sql([](PGconn* c) { CHECK(exec(c, "SELECT max(version) FROM troupe_schema") == "11"); });

  cluster_membership b(node(db, "b"));
  REQUIRE(eventually([&] { return shares_are({&b}, {8}); }));
  for (const shard_lease& l : b.shards_held()) CHECK(l.epoch == 4);
  const auto nodes = b.nodes();
  REQUIRE(find_node(nodes, "old"));
  CHECK(find_node(nodes, "old")->state == node_state::dead);

  sequential_ids ids;
  thread t("t", 1);
  t.append(note(1), 1, ids);
  CHECK(db.store->append_fenced(t, 0, thread_lease{"old", 4, 9'000'000'000'000}).error().type == "fenced");
  const auto mine = db.store->acquire_lease_in_shard("t", "b", *held(b, 0), wall_clock_ms(), 1h);
  REQUIRE(mine);
  CHECK(db.store->append_fenced(t, 0, *mine));
}
