// What only the PostgreSQL store does: getting over a connection the server
// dropped, and migrating a database an older troupe left. Skipped, visibly,
// without a server.

#include "runtime/store/postgres/detail/migrations.hpp"
#include "runtime/store/postgres/detail/result.hpp"
#include "support/detached.hpp"
#include "support/freezing_proxy.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("the PostgreSQL store gets over a dropped connection") {
  postgres_backend backend;
  REQUIRE_BACKEND(backend);
  sequential_ids ids;
  thread t("t1", 1);
  commit(backend.threads(), t, {note(1)}, 1, ids);

  SECTION("a read is repeated on a fresh connection") {
    backend.drop_connections();
    auto loaded = backend.threads().load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 1);
  }
  SECTION("a commit fails with io, is not repeated, and the next one goes through") {
    backend.drop_connections();
    t.append(note(2), 2, ids);
    auto first = backend.threads().append(t, 1);
    if (!first) {
      CHECK(first.error().type == "io");
      CHECK(backend.threads().append(t, 1));
    }
    CHECK(backend.threads().load("t1")->size() == 2);
  }
}

TEST_CASE("the PostgreSQL store migrates a schema-3 database and keeps its conversations") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  // Two conversations as a troupe of schema 3 left them, their last
  // messages in the same millisecond.
  backend.sql([](PGconn* c) {
    postgres::migrate(c, 3);
    postgres::result r = postgres::run(c,
                                       "INSERT INTO conversations (id, user_id, platform, platform_identifier, "
                                       "thread_id, title, metadata, created_at, updated_at, last_message_at, archived) "
                                       "VALUES ('conv-a', 'u1', 'web', 'a', 'thread-a', '', '{}', 5, 5, 9, false), "
                                       "('conv-b', 'u1', 'web', 'b', 'thread-b', '', '{}', 5, 5, 9, false)");
    REQUIRE(r.ok());
  });
  backend.reopen();

  backend.sql([](PGconn* c) {
    postgres::result r = postgres::run(c, "SELECT max(version) FROM troupe_schema");
    REQUIRE(r.ok());
    CHECK(r.text(0, 0) == std::to_string(postgres_store::schema_version));
  });
  auto listed = backend.conversations().list_conversations("u1", 10, 0);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].id == "conv-b");  // opened last
  CHECK((*listed)[1].id == "conv-a");

  sequential_ids ids;
  thread t("thread-a", 1);
  commit(backend.threads(), t, {said("user", "again")}, 10, ids);
  listed = backend.conversations().list_conversations("u1", 10, 0);
  REQUIRE(listed);
  CHECK((*listed)[0].id == "conv-a");
  CHECK((*listed)[0].title == "again");
}

// Version 5 writes a batch set by set; version 3's loop (troupe_append_each)
// wrote it commit by commit. Both must answer and write the same, for every
// way a commit can end: new thread, next commit, stale, fenced, missing
// thread, sent from the wrong seq, and a batch naming one thread twice.
TEST_CASE("a PostgreSQL batch answers and writes what committing one by one does") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  backend.sql([](PGconn* c) {
    postgres::migrate(c);
    for (const char* setup :
         {"INSERT INTO threads VALUES ('kept', 2, 2, 1, 1, '{}'), ('stale', 1, 1, 1, 1, '{}'), "
          "('leased', 1, 1, 1, 1, '{}'), ('taken', 1, 1, 1, 1, '{}'), ('behind', 2, 2, 1, 1, '{}')",
          "INSERT INTO entries SELECT t, s, t || '-' || s, 1, 'note', '{}', '{}' FROM "
          "(VALUES ('kept', 0), ('kept', 1), ('stale', 0), ('leased', 0), ('taken', 0), ('behind', 0), ('behind', 1)) "
          "AS x(t, s)",
          "INSERT INTO leases VALUES ('leased', 'A', 1, 100), ('taken', 'A', 1, 100)",
          "INSERT INTO conversations (id, user_id, platform, platform_identifier, thread_id, title, metadata, "
          "created_at, updated_at, last_message_at, archived) VALUES ('conv', 'u', 'web', 'k', 'kept', '', '{}', 1, 1, "
          "1, false)"})
      REQUIRE(postgres::run(c, setup).ok());

    auto entries = [](std::initializer_list<int> seqs) {
      std::string out = "[";
      for (int s : seqs)
        out += std::string(out.size() > 1 ? "," : "") + "{\"seq\":" + std::to_string(s) + ",\"id\":\"new-" +
               std::to_string(s) + "\",\"at\":7,\"kind\":\"message\",\"payload\":\"{\\\"role\\\":\\\"user\\\"}\"," +
               "\"refs\":\"{}\"}";
      return out + "]";
    };
    auto commit = [&](const std::string& id, int expected, int size, int first, std::initializer_list<int> seqs,
                      const std::string& extra = "") {
      return "{\"id\":\"" + id + "\",\"expected\":" + std::to_string(expected) + ",\"rev\":" + std::to_string(size) +
             ",\"size\":" + std::to_string(size) +
             ",\"created\":5,\"updated\":6,\"metadata\":{\"m\":1},\"first\":" + std::to_string(first) +
             ",\"entries\":" + entries(seqs) + ",\"last_message_at\":null,\"title\":null,\"now\":8" + extra + "}";
    };
    const std::string each_way = "[" + commit("fresh", 0, 2, 0, {0, 1}) + "," +
                                 commit("kept", 2, 3, 2, {2}, ",\"last_message_at\":7,\"title\":\"hello\"") + "," +
                                 commit("stale", 0, 1, 0, {0}) + "," +
                                 commit("leased", 1, 2, 1, {1}, ",\"owner\":\"A\",\"epoch\":1,\"lease_until\":500") +
                                 "," +
                                 commit("taken", 1, 2, 1, {1}, ",\"owner\":\"B\",\"epoch\":1,\"lease_until\":500") +
                                 "," + commit("ghost", 3, 4, 3, {3}) + "," + commit("behind", 2, 3, 1, {1, 2}) + "]";
    const std::string twice = "[" + commit("kept", 2, 3, 2, {2}) + "," + commit("kept", 3, 4, 3, {3}) + "]";

    // A batch's answers and everything the store holds after it, rolled back.
    auto outcome = [&](const std::string& function, const std::string& batch) {
      REQUIRE(postgres::run(c, "BEGIN").ok());
      std::string seen;
      for (const std::string& q :
           {"SELECT ord || ' ' || status || ' ' || stored_rev || ' ' || stored_size || ' ' || holder FROM " + function +
                "($1::json) ORDER BY ord",
            std::string("SELECT concat_ws(' ', id, rev, size, created_at, updated_at, metadata::text) FROM threads "
                        "ORDER BY id"),
            std::string("SELECT concat_ws(' ', thread_id, seq, id, at, kind, payload::text, refs::text) FROM entries "
                        "ORDER BY thread_id, seq"),
            std::string("SELECT concat_ws(' ', thread_id, owner, epoch, expires_at) FROM leases ORDER BY thread_id"),
            std::string("SELECT concat_ws(' ', id, title, updated_at, last_message_at) FROM conversations")}) {
        const bool takes_batch = q.find("$1") != std::string::npos;
        postgres::result r = takes_batch ? postgres::run(c, q.c_str(), {batch}) : postgres::run(c, q.c_str());
        INFO(q << ": " << PQerrorMessage(c));
        REQUIRE(r.ok());
        for (int i = 0; i < r.rows(); ++i) seen += r.text(i, 0) + "\n";
        seen += "--\n";
      }
      REQUIRE(postgres::run(c, "ROLLBACK").ok());
      return seen;
    };

    SECTION("every way a commit can end, one of each in one batch") {
      const std::string by_set = outcome("troupe_append_batch", each_way);
      CHECK(by_set == outcome("troupe_append_each", each_way));
      CHECK_THAT(by_set, Catch::Contains("0 ok 2 2 \n1 ok 3 3 \n2 conflict 1 1 \n3 ok 2 2 \n4 fenced 1 0 A\n"
                                         "5 conflict 0 0 \n6 resend 2 2 \n"));
      CHECK_THAT(by_set, Catch::Contains("leased A 1 500"));   // renewed by its commit
      CHECK_THAT(by_set, Catch::Contains("conv hello 8 7"));   // the conversation touched
      CHECK_THAT(by_set, Catch::Contains("fresh 1 new-1 7"));  // a new thread's entries
    }
    SECTION("a batch naming one thread twice") {
      const std::string by_set = outcome("troupe_append_batch", twice);
      CHECK(by_set == outcome("troupe_append_each", twice));
      CHECK_THAT(by_set, Catch::Contains("0 ok 3 3 \n1 ok 4 4 \n"));
    }
  });
}

namespace {

// The leases, a line each in thread order: what a batch left behind.
std::string leases_in(PGconn* c) {
  postgres::result leases =
      postgres::run(c, "SELECT concat_ws(' ', thread_id, owner, epoch, expires_at) FROM leases ORDER BY thread_id");
  REQUIRE(leases.ok());
  std::string seen;
  for (int i = 0; i < leases.rows(); ++i) seen += leases.text(i, 0) + "\n";
  return seen;
}

}  // namespace

// Lease takes at load go in batches too (troupe_take_leases); each must
// answer and leave the leases as troupe_take_lease does, in batch order.
TEST_CASE("a PostgreSQL batch of lease takes answers as taking them one by one does") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  backend.sql([](PGconn* c) {
    postgres::migrate(c);
    REQUIRE(postgres::run(c,
                          "INSERT INTO leases VALUES ('mine', 'A', 3, 900), ('live', 'B', 2, 900), "
                          "('expired', 'B', 5, 100), ('given-up', 'B', 1, 0)")
                .ok());
    struct take {
      std::string id, owner;
    };
    auto batch_of = [](const std::vector<take>& takes) {
      std::string out = "[";
      for (const take& t : takes)
        out += std::string(out.size() > 1 ? "," : "") + "{\"id\":\"" + t.id + "\",\"owner\":\"" + t.owner +
               "\",\"now\":500,\"until\":1500}";
      return out + "]";
    };
    // The answers and the leases after them, rolled back.
    auto outcome = [&](const std::vector<take>& takes, bool batched) {
      REQUIRE(postgres::run(c, "BEGIN").ok());
      std::string seen;
      auto rows = [&](const postgres::result& r, int first) {
        REQUIRE(r.ok());
        for (int i = 0; i < r.rows(); ++i) {
          for (int col = first; col < first + 4; ++col) seen += r.text(i, col) + " ";
          seen += "\n";
        }
      };
      if (batched) {
        rows(postgres::run(c, "SELECT * FROM troupe_take_leases($1::json) ORDER BY ord", {batch_of(takes)}), 1);
      } else {
        for (const take& t : takes)
          rows(postgres::run(c, "SELECT * FROM troupe_take_lease($1, $2, 500, 1500)", {t.id, t.owner}), 0);
      }
      seen += "--\n" + leases_in(c);
      REQUIRE(postgres::run(c, "ROLLBACK").ok());
      return seen;
    };

    SECTION("every way a take can end, one of each in one batch") {
      const std::vector<take> takes{{"new", "A"}, {"mine", "A"}, {"live", "A"}, {"expired", "A"}, {"given-up", "A"}};
      const std::string by_set = outcome(takes, true);
      CHECK(by_set == outcome(takes, false));
      CHECK_THAT(by_set, Catch::Contains("taken A 1 1500 \ntaken A 4 1500 \nowned B 2 900 \ntaken A 6 1500 \n"
                                         "taken A 2 1500 \n"));
    }
    SECTION("a batch naming one thread twice") {
      const std::vector<take> takes{{"new", "A"}, {"new", "B"}, {"new", "A"}};
      const std::string by_set = outcome(takes, true);
      CHECK(by_set == outcome(takes, false));
      CHECK_THAT(by_set, Catch::Contains("taken A 1 1500 \nowned A 1 1500 \ntaken A 2 1500 \n"));
    }
  });
}

// Leases given up by agents that stop go in batches too
// (troupe_release_leases); a batch must leave the leases as releasing each
// on its own does.
TEST_CASE("a PostgreSQL batch of lease releases gives up what releasing them one by one does") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  backend.sql([](PGconn* c) {
    postgres::migrate(c);
    REQUIRE(postgres::run(c,
                          "INSERT INTO leases VALUES ('mine', 'A', 3, 900), ('taken-over', 'B', 4, 900), "
                          "('older', 'A', 5, 900), ('given-up', 'A', 1, 0), ('twice', 'A', 2, 900)")
                .ok());
    struct release {
      std::string id, owner;
      int epoch;
    };
    // The leases after the releases, rolled back.
    auto outcome = [&](const std::vector<release>& releases, bool batched) {
      REQUIRE(postgres::run(c, "BEGIN").ok());
      if (batched) {
        std::string batch = "[";
        for (const release& r : releases)
          batch += std::string(batch.size() > 1 ? "," : "") + "{\"id\":\"" + r.id + "\",\"owner\":\"" + r.owner +
                   "\",\"epoch\":" + std::to_string(r.epoch) + "}";
        REQUIRE(postgres::run(c, "SELECT troupe_release_leases($1::json)", {batch + "]"}).ok());
      } else {
        // What postgres_store::release_lease runs for one.
        for (const release& r : releases)
          REQUIRE(postgres::run(c,
                                "UPDATE leases SET expires_at = 0 WHERE thread_id = $1 AND owner = $2 AND epoch = $3",
                                {r.id, r.owner, std::to_string(r.epoch)})
                      .ok());
      }
      const std::string seen = leases_in(c);
      REQUIRE(postgres::run(c, "ROLLBACK").ok());
      return seen;
    };
    const std::vector<release> releases{{"mine", "A", 3},     {"taken-over", "A", 3}, {"older", "A", 4},
                                        {"given-up", "A", 1}, {"missing", "A", 1},    {"twice", "A", 2},
                                        {"twice", "A", 2}};
    const std::string by_set = outcome(releases, true);
    CHECK(by_set == outcome(releases, false));
    CHECK(by_set == "given-up A 1 0\nmine A 3 0\nolder A 5 900\ntaken-over B 4 900\ntwice A 2 0\n");
  });
}

namespace {

// A commit of one note at seq `first` to a thread at rev `first`, as an
// element of troupe_append_batch's argument.
std::string one_note_commit(const std::string& id, int first) {
  const std::string next = std::to_string(first + 1);
  return "{\"id\":\"" + id + "\",\"expected\":" + std::to_string(first) + ",\"rev\":" + next + ",\"size\":" + next +
         ",\"created\":1,\"updated\":2,\"metadata\":{},\"first\":" + std::to_string(first) +
         ",\"entries\":[{\"seq\":" + std::to_string(first) + ",\"id\":\"" + id + "-" + next +
         "\",\"at\":2,\"kind\":\"note\",\"payload\":\"{}\",\"refs\":\"{}\"}],\"last_message_at\":null,\"title\":null,"
         "\"now\":3}";
}

}  // namespace

// A row locked by another session (a stuck process, an operator's open
// transaction) must fail the one commit that needs it, not every commit
// queued beside and behind it.
TEST_CASE("a thread whose row another session holds fails alone, and the rest of its batch commits") {
  postgres_options options;
  options.statement_timeout = std::chrono::seconds(60);  // longer than any bound below: only a lock wait is cut
  options.lock_timeout = std::chrono::milliseconds(200);
  postgres_backend backend(options);
  REQUIRE_BACKEND(backend);
  sequential_ids ids;
  std::vector<thread> ts;
  for (const char* id : {"held", "free-a", "free-b"}) {
    ts.emplace_back(id, 1);
    commit(backend.threads(), ts.back(), {note(1)}, 1, ids);
  }
  backend.sql([&](PGconn* holder) {
    REQUIRE(postgres::run(holder, "BEGIN").ok());
    REQUIRE(postgres::run(holder, "SELECT 1 FROM threads WHERE id = 'held' FOR UPDATE").rows() == 1);

    SECTION("the batch function skips the held row and answers it busy") {
      backend.sql([&](PGconn* c) {
        REQUIRE(postgres::run(c, "SET statement_timeout = 10000").ok());
        const std::string batch = "[" + one_note_commit("held", 1) + "," + one_note_commit("free-a", 1) + "]";
        postgres::result r =
            postgres::run(c, "SELECT ord || ' ' || status FROM troupe_append_batch($1::json) ORDER BY ord", {batch});
        INFO(PQerrorMessage(c));
        REQUIRE(r.ok());
        REQUIRE(r.rows() == 2);
        CHECK(r.text(0, 0) == "0 busy");
        CHECK(r.text(1, 0) == "1 ok");
      });
    }
    SECTION("queued commits: the others go in while the row is held, the held one gets a timeout") {
      std::vector<std::future<stored<std::uint64_t>>> answers;
      for (thread& t : ts) {
        const std::uint64_t rev = t.rev();
        t.append(note(2), 2, ids);
        auto done = std::make_shared<std::promise<stored<std::uint64_t>>>();
        answers.push_back(done->get_future());
        backend.threads().append_queued(t, rev, nullptr,
                                        [done](stored<std::uint64_t> r) { done->set_value(std::move(r)); });
      }
      for (auto& a : answers) REQUIRE(finishes(a));
      const auto held = answers[0].get();
      REQUIRE_FALSE(held.has_value());
      CHECK(held.error().type == "timeout");
      CHECK_THAT(held.error().message, Catch::Contains("lock timeout"));
      CHECK(answers[1].get().has_value());
      CHECK(answers[2].get().has_value());
    }
    REQUIRE(postgres::run(holder, "ROLLBACK").ok());
  });
  CHECK(backend.threads().load("free-a")->size() == 2);
  CHECK(backend.threads().load("held")->size() == 1);  // nothing of the failed commit went in
}

namespace {

// The host and port a URI names.
std::pair<std::string, int> address_of(const std::string& uri) {
  std::pair<std::string, int> out{"127.0.0.1", 5432};
  PQconninfoOption* parsed = PQconninfoParse(uri.c_str(), nullptr);
  for (const PQconninfoOption* o = parsed; o && o->keyword; ++o) {
    if (!o->val || !*o->val) continue;
    if (std::string(o->keyword) == "host") out.first = o->val;
    if (std::string(o->keyword) == "port") out.second = std::stoi(o->val);
  }
  PQconninfoFree(parsed);
  return out;
}

}  // namespace

// A server that is stopped (SIGSTOP) or cut off answers nothing and cancels
// nothing, statement_timeout included: the store's own deadline must end
// the call, and closing the store must not wait past it.
TEST_CASE("a PostgreSQL server that stops answering fails calls with a timeout, and closing the store is not held") {
  postgres_backend backend({}, postgres_backend::opening::later);
  REQUIRE_BACKEND(backend);
  const auto [host, port] = address_of(backend.uri());
  freezing_proxy proxy(host, port);
  postgres_options options;
  options.connect_timeout = std::chrono::seconds(2);
  options.statement_timeout = std::chrono::milliseconds(300);
  options.answer_grace = std::chrono::milliseconds(300);
  auto store =
      std::make_shared<postgres_store>(backend.uri() + "&host=127.0.0.1&port=" + std::to_string(proxy.port()), options);
  sequential_ids ids;
  thread t("t1", 1);
  commit(*store, t, {note(1)}, 1, ids);
  proxy.freeze();
  // The call's deadline is 0.6 s; the rest is room for a loaded machine.
  constexpr auto bound = std::chrono::seconds(4);
  const auto start = std::chrono::steady_clock::now();

  SECTION("a read") {
    auto loaded = on_detached_thread([store] { return store->load("t1"); });
    REQUIRE(finishes(loaded));
    CHECK(std::chrono::steady_clock::now() - start < bound);
    const auto r = loaded.get();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().type == "timeout");
  }
  SECTION("a queued commit, with the store closed behind it") {
    t.append(note(2), 2, ids);
    auto done = std::make_shared<std::promise<stored<std::uint64_t>>>();
    auto answered = done->get_future();
    store->append_queued(t, 1, nullptr, [done](stored<std::uint64_t> r) { done->set_value(std::move(r)); });
    auto closed = on_detached_thread([store = std::move(store)]() mutable { store.reset(); });
    REQUIRE(finishes(closed));
    CHECK(std::chrono::steady_clock::now() - start < bound);
    REQUIRE(answered.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    const auto r = answered.get();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().type == "timeout");
  }
}
