// Store calls run off the actor scheduler: a slow commit holds only the
// thread whose commit it is, what arrives for that thread meanwhile waits
// behind it in order, and a store that does not answer in time fails the
// request with a typed error. The runtime here has one scheduler thread, so
// a commit made on it would stop every other agent.

#include "support/agent_stats.hpp"
#include "support/detached.hpp"
#include "support/memory_backed_store.hpp"
#include "support/runtime_harness.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>

using namespace troupe;
using namespace troupe::testing;

namespace {

// A memory store that does what a database does to its caller: it blocks.
// Commits to the threads it is told to hold wait for `release`; `entered`
// opens when the first of them reaches the store.
class slow_store final : public testing::memory_backed_store {
 public:
  gate entered, release;
  std::atomic<bool> time_out_next{false};
  std::atomic<bool> throw_on_load{false};

  void hold(std::string thread_id) {
    std::lock_guard lock(mutex_);
    held_.insert(std::move(thread_id));
  }
  stored<thread> load(const std::string& id) override {
    if (throw_on_load) throw std::runtime_error("the driver threw");
    return inner.load(id);
  }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    if (time_out_next.exchange(false)) return store_error{"timeout", "canceling statement due to statement timeout"};
    if (holds(t.id())) {
      entered.open();
      release.wait();
    }
    return inner.append(t, expected_rev);
  }

 private:
  bool holds(const std::string& id) {
    std::lock_guard lock(mutex_);
    return held_.count(id) > 0;
  }
  std::mutex mutex_;
  std::set<std::string> held_;
};

std::shared_ptr<scripted_provider> answers_done() {
  return std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("done"); });
}

// A store that answers at once, as the memory store does, but whose commit
// throws while `throw_on_append` is set.
class throwing_immediate_store final : public testing::memory_backed_store {
 public:
  std::atomic<bool> throw_on_append{false};
  commit_path path() const override { return commit_path::immediate; }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    if (throw_on_append) throw std::runtime_error("the commit threw");
    return inner.append(t, expected_rev);
  }
};

}  // namespace

TEST_CASE("a slow commit holds only its own thread") {
  auto store = std::make_shared<slow_store>();
  store->hold("a:slow");
  runtime rt({.provider = answers_done(), .store = store, .scheduler_threads = 1, .store_threads = 2});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  agent b = rt.spawn_agent({.id = "b", .model = "m"});

  const request slow = a.ask("first", {.thread_id = "a:slow"});
  REQUIRE(store->entered.wait());

  SECTION("the agent's other threads and other agents finish their turns meanwhile") {
    CHECK(answer_of(must_reply(a.ask("second", {.thread_id = "a:fast"}))) == "done");
    CHECK(answer_of(must_reply(b.ask("third"))) == "done");
    CHECK_FALSE(slow.done());
    CHECK(stats_of(rt, "a").commits_in_flight == 1);
  }
  SECTION("a snapshot of a thread not in memory is read from the store meanwhile") {
    CHECK(a.snapshot("a:never")->size() == 0);
  }
  SECTION("the slow thread's snapshot shows what the store holds, not the step being committed") {
    CHECK(a.snapshot("a:slow")->size() == 0);
  }

  store->release.open();
  CHECK(answer_of(must_reply(slow)) == "done");
  CHECK(a.snapshot("a:slow")->size() == 2);
  CHECK(store->load("a:slow")->rev() == a.snapshot("a:slow")->rev());
}

TEST_CASE("what arrives for a thread while its commit is in flight waits behind it, in order") {
  auto store = std::make_shared<slow_store>();
  store->hold("a:default");
  runtime rt({.provider = answers_done(), .store = store, .scheduler_threads = 1});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});

  const request r = a.ask("first");
  REQUIRE(store->entered.wait());
  r.cancel("changed my mind");
  REQUIRE(stats_become(rt, "a", [](const agent_stats& s) { return s.held_signals == 1; }));

  store->release.open();
  const reply got = must_reply(r);
  CHECK(error_type_of(got) == "cancelled");  // the cancel came after the question's commit, and was applied
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(t->at_seq(0)->payload.at("content") == "first");
  CHECK(store->load("a:default")->rev() == t->rev());
  CHECK(every_call_answered(*t));
}

TEST_CASE("a store that does not answer in time fails the request with store_timeout") {
  auto store = std::make_shared<slow_store>();

  SECTION("the store says so (a statement timeout); the agent stays usable") {
    runtime rt({.provider = answers_done(), .store = store});
    agent a = rt.spawn_agent({.id = "a", .model = "m"});
    store->time_out_next = true;
    const reply r = must_reply(a.ask("first"));
    CHECK(error_type_of(r) == "store_timeout");
    CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("statement timeout"));
    CHECK(answer_of(must_reply(a.ask("second"))) == "done");
    CHECK(store->load("a:default")->rev() == a.snapshot()->rev());
  }
  SECTION("its calls wait past the deadline for a store thread") {
    store->hold("a:slow");
    runtime rt({.provider = answers_done(),
                .store = store,
                .scheduler_threads = 1,
                .store_threads = 1,
                .store_deadline = std::chrono::milliseconds(20)});
    agent a = rt.spawn_agent({.id = "a", .model = "m"});
    const request slow = a.ask("first", {.thread_id = "a:slow"});
    REQUIRE(store->entered.wait());  // the only store thread is taken
    const request late = a.ask("second", {.thread_id = "a:other"});
    // Its load is queued once the agent holds the thread (loading).
    REQUIRE(stats_become(rt, "a", [](const agent_stats& s) { return s.loaded_threads == 2; }));
    const auto queued_at = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - queued_at < std::chrono::milliseconds(50)) {
    }  // the deadline passes
    store->release.open();
    const reply r = must_reply(late);
    CHECK(error_type_of(r) == "store_timeout");
    must_reply(slow);  // (its own later commits may be late too on a busy machine)
    // The thread that could not be loaded is not kept half-loaded: the next ask loads it.
    CHECK(answer_of(must_reply(a.ask("again", {.thread_id = "a:other"}))) == "done");
  }
}

TEST_CASE("an agent told to stop while a commit is in flight answers its request once the store has") {
  auto store = std::make_shared<slow_store>();
  store->hold("a:default");
  runtime rt({.provider = answers_done(), .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  const request r = a.ask("first");
  REQUIRE(store->entered.wait());

  auto stopped = on_detached_thread([a] { return a.stop(); });
  REQUIRE(stats_become(rt, "a", [](const agent_stats& s) { return s.stopping; }));
  CHECK_FALSE(r.done());
  store->release.open();
  CHECK(error_type_of(must_reply(r)) == "shutdown");
  REQUIRE(finishes(stopped));
  CHECK(stopped.get());
  const auto t = store->load("a:default");
  REQUIRE(t.has_value());
  CHECK(t->at_seq(0)->payload.at("content") == "first");
  CHECK(every_call_answered(*t));
}

TEST_CASE("a store that throws while loading a thread still answers the ask, and the thread loads later") {
  auto store = std::make_shared<slow_store>();
  runtime rt({.provider = answers_done(), .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  store->throw_on_load = true;
  const reply r = must_reply(a.ask("first"));
  CHECK(error_type_of(r) == "store_failed");
  CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("the driver threw"));
  const auto shown = a.snapshot();  // its read threw too: answered all the same (empty, as for any store error)
  REQUIRE(shown.has_value());
  CHECK(shown->size() == 0);
  store->throw_on_load = false;
  CHECK(answer_of(must_reply(a.ask("second"))) == "done");
}

TEST_CASE("an immediate store that throws on a commit fails that request; the agent carries on") {
  auto store = std::make_shared<throwing_immediate_store>();
  runtime rt({.provider = answers_done(), .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  store->throw_on_append = true;
  const reply r = must_reply(a.ask("first"));
  CHECK(error_type_of(r) == "store_failed");
  CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("the commit threw"));
  store->throw_on_append = false;
  CHECK(answer_of(must_reply(a.ask("second"))) == "done");
  const auto t = store->load("a:default");
  REQUIRE(t.has_value());
  CHECK(t->at_seq(0)->payload.at("content") == "second");  // nothing of the failed commit was written
}
