#include "runtime/memory_thread_store.hpp"
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("the memory store keeps committed threads and refuses stale writers") {
  memory_thread_store store;
  sequential_ids ids;
  thread t("t1", 5);
  t.append(entry_draft{"note", {{"n", 1}}, {}}, 10, ids);

  CHECK(store.load("t1").error().type == "not_found");
  REQUIRE(store.append(t, 0));
  CHECK(store.list() == std::vector<std::string>{"t1"});

  t.append(entry_draft{"note", {{"n", 2}}, {}}, 11, ids);
  SECTION("a writer that saw the stored rev commits") {
    CHECK(*store.append(t, 1) == 2);
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 2);
    CHECK(loaded->last()->payload.at("n") == 2);
  }
  SECTION("a writer with an old rev gets a conflict and nothing changes") {
    auto r = store.append(t, 0);
    REQUIRE(!r);
    CHECK(r.error().type == "conflict");
    CHECK(store.load("t1")->size() == 1);
  }
  SECTION("a loaded thread can be appended to without touching the stored one") {
    auto loaded = store.load("t1");
    loaded->append(entry_draft{"note", {{"n", 3}}, {}}, 12, ids);
    CHECK(store.load("t1")->size() == 1);
  }
  SECTION("remove forgets the thread") {
    CHECK(store.remove("t1"));
    CHECK(!store.remove("t1"));
    CHECK(store.list().empty());
  }
}
