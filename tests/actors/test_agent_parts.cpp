// The agent's parts that need no actor system: its per-thread request queue,
// its thread table, what it reports for a signal.

#include "actors/detail/agent_observe.hpp"
#include "actors/detail/request_queue.hpp"
#include "actors/detail/reserve_growing.hpp"
#include "actors/detail/thread_table.hpp"
#include "runtime/store/memory_store.hpp"
#include "thread/id_source.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <unordered_map>

using namespace troupe;

namespace {

struct ask {
  std::string id;
  const std::string& request_id() const { return id; }
};

struct slot {
  bool busy = false;
  bool idle() const { return !busy; }
};

}  // namespace

TEST_CASE("a thread's asks run one at a time, in order, up to a bound") {
  request_queue<ask> q(2);
  using admission = request_queue<ask>::admission;
  REQUIRE(q.admit() == admission::start_now);
  q.begin("a");
  REQUIRE(q.admit() == admission::wait);
  q.push({"b"});
  q.push({"c"});
  CHECK(q.admit() == admission::full);
  CHECK(q.size() == 3);

  SECTION("the next starts only once the running one ends") {
    CHECK_FALSE(q.take_next());
    q.end();
    CHECK(q.take_next()->id == "b");
  }
  SECTION("a waiting ask can be taken out") {
    CHECK(q.remove("c")->id == "c");
    CHECK_FALSE(q.remove("c"));
    CHECK(q.admit() == admission::wait);
  }
  SECTION("drain hands back every waiting ask") {
    CHECK(q.drain().size() == 2);
    q.end();
    CHECK(q.idle());
  }
}

TEST_CASE("the thread table unloads idle threads, least recently used first") {
  thread_table<slot> table({.max_loaded = 2, .idle_after = std::chrono::milliseconds(1000)});
  std::vector<std::string> unloaded;
  auto note = [&](const std::string& id, const auto&) { unloaded.push_back(id); };
  table.insert("a", {}, 0);
  table.insert("b", {}, 1);
  table.insert("c", {}, 2);

  SECTION("beyond the count") {
    table.evict(3, note);
    CHECK(unloaded == std::vector<std::string>{"a"});
    CHECK(table.size() == 2);
  }
  SECTION("a touched thread goes last") {
    table.touch("a", 3);
    table.evict(4, note);
    CHECK(unloaded == std::vector<std::string>{"b"});
  }
  SECTION("a busy thread stays") {
    table.find("a")->busy = true;
    table.evict(3, note);
    CHECK(unloaded == std::vector<std::string>{"b"});
    CHECK(table.find("a"));
  }
  SECTION("after the idle time, whatever the count") {
    table.evict(1002, note);
    CHECK(unloaded == std::vector<std::string>{"a", "b"});
    table.evict(5000, note);
    CHECK(table.size() == 0);
  }
}

TEST_CASE("loading a thread tells a new thread from a store that failed") {
  memory_store store;
  sequential_ids ids;
  SECTION("a thread the store does not hold starts empty") {
    auto t = load_thread(store, "new", ids, 0);
    REQUIRE(t.has_value());
    CHECK(t->history().size() == 0);
  }
  SECTION("a store error is an error, not an empty thread") {
    struct failing_store final : thread_store {
      stored<thread> load(const std::string&) override { return store_error{"io", "disk on fire"}; }
      stored<std::uint64_t> append(const thread_view&, std::uint64_t) override { return store_error{"io", "no"}; }
      std::vector<std::string> list() override { return {}; }
      bool remove(const std::string&) override { return false; }
    } failing;
    auto t = load_thread(failing, "x", ids, 0);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().type == "io");
  }
}

TEST_CASE("what a signal tells the world depends on what the agent awaits") {
  react_state s;
  s.status = react_status::awaiting_llm;
  s.call_id = "c1";
  s.request_id = "r1";
  SECTION("a delta of the awaited call is streamed") {
    auto seen = observe(s, llm_delta{"c1", "hel", ""});
    REQUIRE(seen);
    CHECK(seen->kind == telemetry_kind::llm_delta);
    REQUIRE(seen->event);
    CHECK(std::get<delta_event>(*seen->event).text == "hel");
  }
  SECTION("a stale call tells nothing") { CHECK_FALSE(observe(s, llm_delta{"old", "x", ""})); }
  SECTION("without a caller following the request, no event is made") {
    auto seen = observe(s, llm_delta{"c1", "hel", ""}, false);
    REQUIRE(seen);
    CHECK(seen->kind == telemetry_kind::llm_delta);
    CHECK_FALSE(seen->event);
  }
  SECTION("a failed result reports its type and ends the model call") {
    const signal failed = llm_result{"c1", error_info::of("server", "boom")};  // what `seen` reads stays
    auto seen = observe(s, failed);
    REQUIRE(seen);
    CHECK(seen->kind == telemetry_kind::llm_error);
    CHECK(seen->detail == "server");
    CHECK(seen->ends_model_call);
  }
}

TEST_CASE("room made batch by batch rehashes the table a logarithmic number of times") {
  // A spawn of a million agents in batches of 10,000 makes room before each
  // batch: the table may be rehashed as it doubles, not once per batch.
  std::unordered_map<int, int> table;
  std::set<std::size_t> bucket_counts;
  constexpr int batch = 1'000;
  for (int first = 0; first < 200 * batch; first += batch) {
    reserve_growing(table, table.size() + batch);
    const std::size_t buckets = table.bucket_count();
    for (int i = first; i < first + batch; ++i) table.emplace(i, i);
    REQUIRE(table.bucket_count() == buckets);  // the batch itself fitted
    bucket_counts.insert(buckets);
  }
  CHECK(bucket_counts.size() <= 9);  // 1,000 to 200,000 elements: 8 doublings at most

  SECTION("and never shrinks it") {
    const std::size_t before = table.bucket_count();
    reserve_growing(table, 10);
    CHECK(table.bucket_count() == before);
  }
}
