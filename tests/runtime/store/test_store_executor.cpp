// The store executor runs store calls for owners that must not block, and
// answers every call exactly once: with its outcome, or with why it did not run.

#include "runtime/store/detail/store_executor.hpp"
#include "runtime/store/memory_store.hpp"
#include "support/detached.hpp"
#include "support/entry_builders.hpp"
#include "support/memory_backed_store.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

using namespace troupe;
using namespace troupe::testing;

namespace {

// A memory store that blocks like a database would, and says where it ran.
class blocking_store final : public memory_backed_store {
 public:
  std::atomic<bool> hold{false};
  std::atomic<bool> holding{false};
  std::thread::id ran_on;

  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    ran_on = std::this_thread::get_id();
    holding = true;
    while (hold) std::this_thread::yield();
    return inner.append(t, expected_rev);
  }
};

std::future<stored<std::uint64_t>> commit(store_executor& stores, const thread_view& t, std::uint64_t rev) {
  auto done = std::make_shared<std::promise<stored<std::uint64_t>>>();
  auto f = done->get_future();
  stores.append(t, rev, std::nullopt, [done](stored<std::uint64_t> r) { done->set_value(std::move(r)); });
  return f;
}

thread with_notes(const std::string& id, int n) {
  sequential_ids ids;
  thread t(id, 1);
  for (int i = 0; i < n; ++i) t.append({"note", {{"n", i}}, {}}, 2, ids);
  return t;
}

}  // namespace

TEST_CASE("a store that blocks is called from the executor's threads, never the caller's") {
  auto store = std::make_shared<blocking_store>();
  store_executor stores(store, {.threads = 2});
  auto f = commit(stores, with_notes("t", 2), 0);
  REQUIRE(finishes(f));
  CHECK(*f.get() == 2);
  CHECK(store->ran_on != std::this_thread::get_id());

  SECTION("a stale writer gets the store's conflict, as from append()") {
    auto stale = commit(stores, with_notes("t", 3), 0);
    REQUIRE(finishes(stale));
    CHECK(stale.get().error().type == "conflict");
  }
}

TEST_CASE("an immediate store is called on the caller's thread") {
  auto store = std::make_shared<memory_store>();
  store_executor stores(store);
  CHECK(stores.immediate());
  CHECK(stores.threads() == 0);
  std::thread::id ran_on;
  stores.submit([&](store_job_status why) {
    CHECK(why == store_job_status::run);
    ran_on = std::this_thread::get_id();
  });
  CHECK(ran_on == std::this_thread::get_id());
}

TEST_CASE("a call that waited past the deadline for a store thread is not run") {
  auto store = std::make_shared<blocking_store>();
  store->hold = true;
  store_executor stores(store, {.threads = 1, .deadline = std::chrono::milliseconds(100)});
  auto first = commit(stores, with_notes("a", 1), 0);
  while (!store->holding) std::this_thread::yield();  // the only thread is taken
  auto late = commit(stores, with_notes("b", 1), 0);
  const auto queued = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - queued < std::chrono::milliseconds(300)) {
  }  // the deadline passes
  store->hold = false;
  REQUIRE(finishes(late));
  const auto r = late.get();
  REQUIRE(!r);
  CHECK(r.error().type == "timeout");
  CHECK(store->inner.load("b").error().type == "not_found");  // nothing of it was written
  REQUIRE(finishes(first));
  CHECK(first.get().has_value());
}

TEST_CASE("an executor shut down with calls queued answers each of them") {
  auto store = std::make_shared<blocking_store>();
  store->hold = true;
  std::future<stored<std::uint64_t>> first, queued;
  {
    auto stores = std::make_unique<store_executor>(store, store_executor_options{.threads = 1});
    first = commit(*stores, with_notes("a", 1), 0);
    while (!store->holding) std::this_thread::yield();
    queued = commit(*stores, with_notes("b", 1), 0);
    auto destroyed = on_detached_thread([&stores] { stores.reset(); });
    store->hold = false;  // the running call finishes; the queued one is told
    REQUIRE(finishes(destroyed));
  }
  REQUIRE(finishes(first));
  REQUIRE(finishes(queued));
  const auto r = queued.get();
  // Either it was picked up before the shutdown, or it is told why not.
  if (!r) CHECK_THAT(r.error().message, Catch::Contains("shutting down"));
}

namespace {

// A store that queues lease takes and releases, and gives a release up only
// when the test says so (as a writer thread would, later).
class deferred_releases final : public memory_backed_store {
 public:
  bool queues_lease_takes() const override { return true; }
  void release_lease_queued(const std::string&, const thread_lease&, std::function<void()> done) override {
    pending = std::move(done);
    queued = true;
  }
  std::function<void()> pending;
  std::atomic<bool> queued{false};
};

}  // namespace

TEST_CASE("an executor ends after the leases given up through it, for a store that queues them") {
  auto store = std::make_shared<deferred_releases>();
  auto stores = std::make_unique<store_executor>(store, store_executor_options{.threads = 1});
  stores->release_lease("t1", thread_lease{"A", 1, 5'000});
  REQUIRE(store->queued);  // handed to the store at once, not to a store thread
  auto destroyed = on_detached_thread([&stores] { stores.reset(); });
  // Still waiting for the store, which has not given the lease up yet.
  CHECK(destroyed.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  store->pending();
  REQUIRE(finishes(destroyed));
}
