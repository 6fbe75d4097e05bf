// The SQLite store's group commit: the leader/follower hand-off, and the
// transaction a batch runs in. Both must survive a commit that throws, or
// every later writer waits for a leader that is gone.

#include "runtime/store/sqlite/detail/connection.hpp"
#include "runtime/store/sqlite/group_commit.hpp"
#include "support/detached.hpp"
#include "support/store_backends.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>

using namespace troupe;
using namespace troupe::sqlite;
using namespace troupe::testing;

namespace {

using outcome = std::optional<store_error>;

std::future<outcome> write_on_thread(std::shared_ptr<group_commit> commits) {
  return on_detached_thread([commits] {
    const write_work nothing = [](connection&) { return outcome(); };
    return commits->write(nothing);
  });
}

void wait_until_in_flight(const group_commit& commits, std::uint64_t n) {
  while (commits.stats().in_flight < n) std::this_thread::yield();
}

}  // namespace

TEST_CASE("a batch that throws fails its own commits and hands leadership on") {
  // The first batch is held until three more commits have queued behind
  // it; those three form the second batch, which throws as an allocation
  // failure would. A fifth commit comes after.
  std::atomic<int> batches{0};
  std::atomic<bool> first_running{false};
  std::shared_ptr<group_commit> commits;
  commits = std::make_shared<group_commit>([&](const std::vector<write_job*>&) {
    const int n = batches++;
    if (n == 0) {
      first_running = true;
      wait_until_in_flight(*commits, 4);
    }
    if (n == 1) throw std::bad_alloc();
    return std::size_t{1};
  });

  auto first = write_on_thread(commits);
  while (!first_running) std::this_thread::yield();
  std::vector<std::future<outcome>> thrown;
  for (int i = 0; i < 3; ++i) thrown.push_back(write_on_thread(commits));
  REQUIRE(finishes(first));
  CHECK(first.get() == std::nullopt);

  SECTION("every commit of the batch that threw gets an internal error") {
    for (auto& f : thrown) {
      REQUIRE(finishes(f));
      const outcome o = f.get();
      REQUIRE(o);
      CHECK(o->type == "internal");
      CHECK_THAT(o->message, Catch::Contains("bad_alloc"));
    }
    CHECK(batches == 2);
  }
  SECTION("a later commit leads a batch of its own and succeeds") {
    for (auto& f : thrown) REQUIRE(finishes(f));
    auto later = write_on_thread(commits);
    REQUIRE(finishes(later));
    CHECK(later.get() == std::nullopt);
    CHECK(commits->stats().in_flight == 0);
  }
}

TEST_CASE("a commit that throws inside a transaction undoes only its own writes") {
  sqlite_backend file;  // a fresh file, opened here through a connection of its own
  connection c(file.path.string(), SQLITE_OPEN_READWRITE);
  REQUIRE(c.exec("CREATE TABLE t (x INTEGER)"));
  auto insert = [](int x) {
    return write_work([x](connection& w) -> outcome {
      statement s(w, "INSERT INTO t (x) VALUES (?)");
      s.bind(1, std::int64_t{x});
      if (s.step() != SQLITE_DONE) return w.io_error("insert");
      return std::nullopt;
    });
  };
  const write_work inserts_then_throws = [&](connection& w) -> outcome {
    if (auto e = insert(99)(w)) return e;
    throw std::runtime_error("payload could not be serialised");
  };
  auto stored_values = [&] {
    std::vector<std::int64_t> out;
    statement s(c, "SELECT x FROM t ORDER BY x");
    while (s.step() == SQLITE_ROW) out.push_back(s.int64(0));
    return out;
  };
  const write_work one = insert(1), two = insert(2);

  SECTION("sharing a transaction, the others are committed") {
    write_job a{&one}, bad{&inserts_then_throws}, b{&two};
    run_in_one_transaction(c, {&a, &bad, &b});
    CHECK(!a.error);
    CHECK(!b.error);
    REQUIRE(bad.error);
    CHECK(bad.error->type == "internal");
    CHECK_THAT(bad.error->message, Catch::Contains("payload could not be serialised"));
    CHECK(stored_values() == std::vector<std::int64_t>{1, 2});
  }
  SECTION("alone, its transaction is rolled back and the next one runs") {
    write_job bad{&inserts_then_throws};
    run_in_one_transaction(c, {&bad});
    REQUIRE(bad.error);
    CHECK(bad.error->type == "internal");
    CHECK(!c.in_transaction());
    write_job a{&one};
    run_in_one_transaction(c, {&a});
    CHECK(!a.error);
    CHECK(stored_values() == std::vector<std::int64_t>{1});
  }
}

TEST_CASE("a batch runs without savepoints until a commit fails after writing") {
  sqlite_backend file;
  connection c(file.path.string(), SQLITE_OPEN_READWRITE);
  REQUIRE(c.exec("CREATE TABLE t (x INTEGER)"));
  int runs_of_one = 0;
  const write_work one = [&](connection& w) -> outcome {
    ++runs_of_one;
    statement s(w, "INSERT INTO t (x) VALUES (1)");
    if (s.step() != SQLITE_DONE) return w.io_error("insert");
    return std::nullopt;
  };
  const write_work refused = [](connection&) -> outcome { return store_error{"conflict", "checked, not written"}; };
  const write_work writes_then_fails = [](connection& w) -> outcome {
    statement s(w, "INSERT INTO t (x) VALUES (99)");
    if (s.step() != SQLITE_DONE) return w.io_error("insert");
    return store_error{"conflict", "written, then refused"};
  };
  auto count = [&] {
    statement s(c, "SELECT count(*), coalesce(sum(x), 0) FROM t");
    s.step();
    return std::pair{s.int64(0), s.int64(1)};
  };

  SECTION("a commit refused before it wrote anything: the batch runs once") {
    write_job a{&one}, bad{&refused};
    CHECK(run_in_one_transaction(c, {&a, &bad}) == 1);
    CHECK(!a.error);
    REQUIRE(bad.error);
    CHECK(bad.error->message == "checked, not written");
    CHECK(runs_of_one == 1);
    CHECK(count() == std::pair<std::int64_t, std::int64_t>{1, 1});
  }
  SECTION("a commit that fails after writing: the batch runs again, and only its writes are undone") {
    write_job a{&one}, bad{&writes_then_fails};
    CHECK(run_in_one_transaction(c, {&a, &bad}) == 2);  // both count in the stats
    CHECK(!a.error);
    REQUIRE(bad.error);
    CHECK(bad.error->message == "written, then refused");
    CHECK(runs_of_one == 2);
    CHECK(count() == std::pair<std::int64_t, std::int64_t>{1, 1});
  }
}

namespace {

// A submitted commit's outcome, for a bounded wait on it.
std::future<outcome> submit(
    group_commit& commits, write_work work = [](connection&) { return outcome(); }) {
  auto done = std::make_shared<std::promise<outcome>>();
  auto f = done->get_future();
  commits.submit(std::move(work), [done](outcome o) { done->set_value(std::move(o)); });
  return f;
}

}  // namespace

TEST_CASE("commits submitted without waiting are batched by the writer thread") {
  // The first batch is held until 50 more commits have queued behind it:
  // they form the second, one transaction for all of them.
  std::atomic<int> batches{0};
  std::atomic<std::size_t> largest{0};
  std::atomic<bool> first_running{false};
  std::shared_ptr<group_commit> commits;
  commits = std::make_shared<group_commit>([&](const std::vector<write_job*>& batch) {
    if (batches++ == 0) {
      first_running = true;
      wait_until_in_flight(*commits, 51);
    }
    largest = std::max(largest.load(), batch.size());
    return std::size_t{1};
  });

  std::vector<std::future<outcome>> answers;
  answers.push_back(submit(*commits));
  while (!first_running) std::this_thread::yield();
  for (int i = 0; i < 50; ++i) answers.push_back(submit(*commits));

  SECTION("every commit is answered, and the queue became one transaction") {
    for (auto& f : answers) {
      REQUIRE(finishes(f));
      CHECK(f.get() == std::nullopt);
    }
    CHECK(batches == 2);
    CHECK(largest == 50);
    CHECK(commits->stats().commits == 51);
    CHECK(commits->stats().in_flight == 0);
  }
  SECTION("a waiting writer queued behind them rides in the same batch") {
    auto waiting = write_on_thread(commits);
    REQUIRE(finishes(waiting));
    CHECK(waiting.get() == std::nullopt);
    for (auto& f : answers) REQUIRE(finishes(f));
    CHECK(commits->stats().transactions <= 3);
  }
}

TEST_CASE("a submitted commit that waited past its deadline fails with timeout, unrun") {
  std::atomic<bool> first_running{false}, release{false};
  std::atomic<int> ran{0};
  group_commit commits(
      [&](const std::vector<write_job*>& batch) {
        ran += static_cast<int>(batch.size());
        first_running = true;
        while (!release) std::this_thread::yield();
        return std::size_t{1};
      },
      std::chrono::milliseconds(100));
  auto first = submit(commits);
  while (!first_running) std::this_thread::yield();
  auto late = submit(commits);
  const auto queued = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - queued < std::chrono::milliseconds(300)) {
  }  // the deadline passes
  release = true;
  REQUIRE(finishes(late));
  const outcome o = late.get();
  REQUIRE(o);
  CHECK(o->type == "timeout");
  REQUIRE(finishes(first));
  CHECK(ran == 1);
}

TEST_CASE("a group commit destroyed with commits queued runs them first") {
  std::atomic<int> ran{0};
  std::vector<std::future<outcome>> answers;
  {
    group_commit commits([&](const std::vector<write_job*>& batch) {
      ran += static_cast<int>(batch.size());
      return std::size_t{1};
    });
    for (int i = 0; i < 10; ++i) answers.push_back(submit(commits));
  }
  CHECK(ran == 10);
  for (auto& f : answers) {
    REQUIRE(finishes(f));
    CHECK(f.get() == std::nullopt);
  }
}
