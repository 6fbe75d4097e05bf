#include "thread/thread.hpp"

#include <boost/json.hpp>
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace troupe;
namespace json = boost::json;

namespace {

entry_draft message(std::string role, std::string content, json::object refs = {}) {
  return {"message", json::object{{"role", role}, {"content", content}}, std::move(refs)};
}

entry_draft note(int n) { return {"note", json::object{{"n", n}}, {}}; }

}  // namespace

TEST_CASE("appending assigns seq, id and at from the injected sources") {
  sequential_ids ids;
  thread t("t1", 500);
  t.append(message("user", "a"), 1000, ids);
  t.append({message("assistant", "b"), note(1)}, 2000, ids);

  REQUIRE(t.size() == 3);
  SECTION("seq runs 0, 1, 2 without gaps") {
    for (std::uint64_t i = 0; i < t.size(); ++i) CHECK(t.at_seq(i)->seq == i);
  }
  SECTION("ids come from the id source and at from the given time") {
    CHECK(t.at_seq(0)->id == "entry-1");
    CHECK(t.at_seq(2)->id == "entry-3");
    CHECK(t.at_seq(0)->at == 1000);
    CHECK(t.at_seq(2)->at == 2000);
  }
  SECTION("rev counts appended entries and updated_at follows the last append") {
    CHECK(t.rev() == 3);
    CHECK(t.created_at() == 500);
    CHECK(t.updated_at() == 2000);
  }
  SECTION("stats count entries per kind") {
    const thread_stats s = t.stats();
    CHECK(s.entry_count == 3);
    CHECK(s.count("message") == 2);
    CHECK(s.count("note") == 1);
    CHECK(s.count("tool_call") == 0);
  }
}

TEST_CASE("an entry without a kind is refused and nothing is appended") {
  sequential_ids ids;
  thread t("t1");
  CHECK_THROWS_AS(t.append({note(1), entry_draft{"", {}, {}}}, 1, ids), std::invalid_argument);
  CHECK(t.empty());
  CHECK(t.rev() == 0);
}

TEST_CASE("a snapshot stays unchanged while the thread keeps growing") {
  sequential_ids ids;
  thread t("t1");
  t.append({message("user", "first"), note(0)}, 10, ids);
  const thread_view snap = t.snapshot();
  const entry* first = snap.at_seq(0);

  for (int i = 1; i <= 1000; ++i) t.append(note(i), 10 + i, ids);

  CHECK(t.size() == 1002);
  CHECK(snap.size() == 2);
  CHECK(snap.rev() == 2);
  CHECK(snap.updated_at() == 10);
  CHECK(snap.stats().count("note") == 1);
  CHECK(snap.last()->payload.at("n") == 0);
  CHECK(snap.at_seq(2) == nullptr);
  SECTION("entries are shared, never copied: the snapshot points at the same storage") {
    CHECK(first == t.at_seq(0));
    CHECK(&*snap.entries().begin() == t.at_seq(0));
  }
  SECTION("the thread's own stats moved on") { CHECK(t.stats().count("note") == 1001); }
}

TEST_CASE("a snapshot can be read on another OS thread while the owner appends") {
  sequential_ids ids;
  thread t("t1");
  // Past the segments whose pointers the log holds in itself (252 entries).
  for (int i = 0; i < 1000; ++i) t.append(note(i), i, ids);
  const thread_view snap = t.snapshot();

  std::int64_t sum = 0;
  std::thread reader([&] {
    for (int round = 0; round < 50; ++round)
      for (const entry& e : snap.entries()) sum += e.payload.at("n").as_int64();
  });
  for (int i = 1000; i < 20'000; ++i) t.append(note(i), i, ids);
  reader.join();

  CHECK(sum == 50 * (999 * 1000 / 2));
  CHECK(t.size() == 20'000);
  CHECK(t.at_seq(19'999)->payload.at("n") == 19'999);
}

TEST_CASE("entries keep their place across the storage's segments, appended one by one or in batches") {
  sequential_ids ids;
  thread t("t1");
  int n = 0;
  for (int batch = 1; n < 5000; ++batch) {
    std::vector<entry_draft> drafts;
    for (int i = 0; i < batch % 9; ++i) drafts.push_back(note(n++));
    t.append(std::move(drafts), n, ids);
  }
  REQUIRE(t.size() == static_cast<std::size_t>(n));
  bool in_place = true;
  for (int i = 0; i < n; ++i) in_place = in_place && t.at_seq(static_cast<std::uint64_t>(i))->payload.at("n") == i;
  CHECK(in_place);
}

TEST_CASE("copies of a thread diverge without disturbing each other") {
  sequential_ids ids;
  thread a("t1");
  a.append(note(0), 1, ids);
  thread b = a;
  a.append(note(1), 2, ids);
  b.append(note(100), 3, ids);  // the shared storage already holds a's entry 1

  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(a.at_seq(1)->payload.at("n") == 1);
  CHECK(b.at_seq(1)->payload.at("n") == 100);
  CHECK(b.at_seq(1)->seq == 1);
  a.append(note(2), 4, ids);
  CHECK(b.size() == 2);
  CHECK(b.last()->payload.at("n") == 100);
}

TEST_CASE("queries over the entries") {
  sequential_ids ids;
  thread t("t1");
  t.append({message("user", "q1", {{"request_id", "r1"}}),
            entry_draft{"tool_call", {{"name", "x"}}, {{"request_id", "r1"}, {"tool_call_id", "c1"}}},
            entry_draft{"tool_result", {{"name", "x"}, {"result", 1}}, {{"request_id", "r1"}, {"tool_call_id", "c1"}}},
            message("assistant", "a1", {{"request_id", "r1"}}), message("user", "q2", {{"request_id", "r2"}}), note(5)},
           1, ids);

  SECTION("last and entry at seq") {
    CHECK(t.last()->kind == "note");
    CHECK(t.at_seq(3)->payload.at("content") == "a1");
    CHECK(t.at_seq(6) == nullptr);
  }
  SECTION("slice is inclusive at both ends") {
    const entry_range r = t.slice(1, 3);
    REQUIRE(r.size() == 3);
    CHECK(r.front().seq == 1);
    CHECK(r.back().seq == 3);
  }
  SECTION("slice is clamped to what exists") {
    CHECK(t.slice(4, 100).size() == 2);
    CHECK(t.slice(3, 3).size() == 1);
    CHECK(t.slice(4, 2).empty());
    CHECK(t.slice(10, 20).empty());
  }
  SECTION("filter by one kind or several") {
    CHECK(t.of_kind("message").size() == 3);
    const auto tools = t.of_kinds({"tool_call", "tool_result"});
    REQUIRE(tools.size() == 2);
    CHECK(tools[0]->seq == 1);
    CHECK(tools[1]->seq == 2);
  }
  SECTION("filter by ref") {
    CHECK(t.with_ref("request_id", "r1").size() == 4);
    CHECK(t.with_ref("tool_call_id", "c1").size() == 2);
    CHECK(t.with_ref("request_id", "nope").empty());
  }
  SECTION("last assistant text") {
    CHECK(t.last_assistant_text() == "a1");
    CHECK(thread("empty").last_assistant_text() == std::nullopt);
  }
  SECTION("the entries range iterates in seq order") {
    std::uint64_t expected = 0;
    for (const entry& e : t.entries()) CHECK(e.seq == expected++);
    CHECK(expected == 6);
  }
}

TEST_CASE("an empty thread answers every query") {
  const thread t("t0", 7);
  CHECK(t.empty());
  CHECK(t.last() == nullptr);
  CHECK(t.at_seq(0) == nullptr);
  CHECK(t.entries().empty());
  CHECK(t.slice(0, 10).empty());
  CHECK(t.of_kind("message").empty());
  CHECK(t.stats().entry_count == 0);
  CHECK(t.metadata().empty());
}

TEST_CASE("restoring a thread checks its entries") {
  auto stored = [](std::uint64_t seq) { return entry{"e", seq, 1, "note", {}, {}}; };

  SECTION("contiguous entries restore with their rev") {
    auto t = thread::restore("t", 5, 1, 2, {{"user", "u"}}, {stored(0), stored(1)});
    REQUIRE(t);
    CHECK(t->size() == 2);
    CHECK(t->rev() == 5);
    CHECK(t->updated_at() == 2);
    CHECK(t->metadata().at("user") == "u");
  }
  SECTION("a gap in seq names the entry") {
    auto t = thread::restore("t", 2, 1, 2, {}, {stored(0), stored(2)});
    REQUIRE(!t);
    CHECK(t.error().field == "entries[1].seq");
  }
  SECTION("a rev below the entry count is refused") {
    auto t = thread::restore("t", 1, 1, 2, {}, {stored(0), stored(1)});
    REQUIRE(!t);
    CHECK(t.error().field == "rev");
  }
}
