// One conformance suite for every store: memory, SQLite and PostgreSQL pass
// the same cases. PostgreSQL cases report themselves skipped (ctest shows
// them as such) only when no server is available.

#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include "runtime/store/detail/lease_holder.hpp"
#include "runtime/store/detail/store_executor.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

TEMPLATE_TEST_CASE("a thread store keeps what was committed and refuses stale writers", "[store]", memory_backend,
                   compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  sequential_ids ids;
  thread t("t1", 5, json::object{{"user", "u1"}});
  t.append(note(1, "h\xC3\xA9llo \xF0\x9F\x98\x80 \"quoted\" \\ \n\t"), 10, ids);

  SECTION("a thread it never saw is not found") { CHECK(store.load("t1").error().type == "not_found"); }

  REQUIRE(store.append(t, 0));
  SECTION("a committed thread loads as it was") {
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 1);
    CHECK(loaded->rev() == 1);
    CHECK(loaded->created_at() == 5);
    CHECK(loaded->updated_at() == 10);
    CHECK(loaded->metadata().at("user") == "u1");
    CHECK(*loaded->at_seq(0) == *t.at_seq(0));
  }
  SECTION("payloads of every JSON shape load exactly as written") {
    t.append({"note",
              {{"float", 12.5},
               {"big", 9007199254740993},
               {"neg", -3},
               {"null", nullptr},
               {"empty", json::object{}},
               {"list", json::array{1, "two", json::array{}, json::object{{"k", false}}}},
               {"nul", std::string("a\0b", 3)}},
              {}},
             11, ids);
    REQUIRE(store.append(t, 1));
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(*loaded->at_seq(1) == *t.at_seq(1));
  }
  SECTION("later commits add only the new entries") {
    t.append({note(2), note(3)}, 11, ids);
    CHECK(*store.append(t, 1) == 3);
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    CHECK(loaded->size() == 3);
    CHECK(loaded->last()->payload.at("n") == 3);
    CHECK(loaded->rev() == 3);
  }
  SECTION("a writer with a stale rev gets a conflict and nothing is written") {
    t.append(note(2), 11, ids);
    auto r = store.append(t, 0);
    REQUIRE(!r);
    CHECK(r.error().type == "conflict");
    CHECK(store.load("t1")->size() == 1);
  }
  SECTION("a second writer that loaded the same rev loses, and nothing of it is written") {
    auto other = store.load("t1");
    REQUIRE(other);
    t.append(note(2), 11, ids);
    other->append(note(3), 12, ids);
    REQUIRE(store.append(t, 1));
    auto r = store.append(*other, 1);
    REQUIRE(!r);
    CHECK(r.error().type == "conflict");
    auto loaded = store.load("t1");
    CHECK(loaded->size() == 2);
    CHECK(loaded->last()->payload.at("n") == 2);
  }
  SECTION("a loaded thread continues its numbering, and commits on top") {
    auto loaded = store.load("t1");
    REQUIRE(loaded);
    loaded->append(note(2), 12, ids);
    CHECK(loaded->last()->seq == 1);
    CHECK(store.append(*loaded, 1));
    CHECK(store.load("t1")->size() == 2);
  }
  SECTION("list and remove") {
    thread other("t0");
    other.append(note(9), 1, ids);
    REQUIRE(store.append(other, 0));
    CHECK(store.list() == std::vector<std::string>{"t0", "t1"});
    CHECK(store.remove("t1"));
    CHECK(!store.remove("t1"));
    CHECK(store.list() == std::vector<std::string>{"t0"});
    CHECK(store.load("t1").error().type == "not_found");
  }
}

TEMPLATE_TEST_CASE("a fork is a new thread with the parent's entries up to the fork point", "[store]", memory_backend,
                   compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  sequential_ids ids;
  thread t("parent", 1, json::object{{"owner", "ana"}});
  commit(store, t, {note(0), note(1), note(2), note(3)}, 10, ids);

  SECTION("it holds entries 0..at_seq unchanged and names its parent") {
    auto child = store.fork("parent", 1, "child", 99);
    REQUIRE(child);
    auto loaded = store.load("child");
    REQUIRE(loaded);
    CHECK(loaded->size() == 2);
    CHECK(*loaded->at_seq(0) == *t.at_seq(0));
    CHECK(*loaded->at_seq(1) == *t.at_seq(1));
    CHECK(loaded->metadata().at("owner") == "ana");
    CHECK(loaded->metadata().at("forked_from") == json::object{{"thread_id", "parent"}, {"at_seq", 1}});
    CHECK(loaded->created_at() == 99);
  }
  SECTION("parent and fork then grow apart") {
    REQUIRE(store.fork("parent", 1, "child", 99));
    auto child = store.load("child");
    REQUIRE(child);
    commit(store, *child, {note(50)}, 100, ids);
    commit(store, t, {note(4)}, 100, ids);
    CHECK(store.load("child")->size() == 3);
    CHECK(store.load("child")->last()->payload.at("n") == 50);
    CHECK(store.load("parent")->size() == 5);
  }
  SECTION("a fork point past the end is invalid") {
    CHECK(store.fork("parent", 4, "child", 99).error().type == "invalid");
    CHECK(store.load("child").error().type == "not_found");
  }
  SECTION("a missing parent is not found; a taken id is a conflict") {
    CHECK(store.fork("nobody", 0, "child", 99).error().type == "not_found");
    CHECK(store.fork("parent", 0, "parent", 99).error().type == "conflict");
    CHECK(store.load("parent")->size() == 4);
  }
}

TEMPLATE_TEST_CASE("a request's entries are read by its id, in seq order, and only its", "[store]", memory_backend,
                   compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  sequential_ids ids;
  thread t("t1", 1);
  auto of = [](std::string request_id, std::string text) {
    return entry_draft{"message",
                       {{"role", "user"}, {"content", std::move(text)}},
                       entry_refs::of(request_id, 1, "call-" + request_id)};
  };
  // r1's entries come in two commits, with r2's and an entry of no request between them.
  commit(store, t, {of("r1", "a"), of("r2", "b"), note(0)}, 10, ids);
  commit(store, t, {entry_draft{"summary", {{"content", "s"}}, {}}, of("r1", "c")}, 11, ids);
  commit(store, t, {of("r10", "d")}, 12, ids);

  SECTION("they are the entries whose refs name it, as load() gives them") {
    auto r1 = store.request_entries("t1", "r1");
    REQUIRE(r1);
    REQUIRE(r1->size() == 2);
    CHECK((*r1)[0] == *t.at_seq(0));
    CHECK((*r1)[1] == *t.at_seq(4));
    auto r2 = store.request_entries("t1", "r2");
    REQUIRE(r2);
    REQUIRE(r2->size() == 1);
    CHECK((*r2)[0] == *t.at_seq(1));
  }
  SECTION("a request id is matched whole, not as a prefix") {
    auto r10 = store.request_entries("t1", "r10");
    REQUIRE(r10);
    REQUIRE(r10->size() == 1);
    CHECK((*r10)[0].seq == 5);
  }
  SECTION("an unknown request, or an unknown thread, has none") {
    auto none = store.request_entries("t1", "r9");
    REQUIRE(none);
    CHECK(none->empty());
    auto nowhere = store.request_entries("t9", "r1");
    REQUIRE(nowhere);
    CHECK(nowhere->empty());
  }
  SECTION("another thread's entries of the same request id are not its") {
    thread other("t2", 1);
    commit(store, other, {of("r1", "elsewhere")}, 13, ids);
    auto r1 = store.request_entries("t1", "r1");
    REQUIRE(r1);
    CHECK(r1->size() == 2);
  }
}

TEMPLATE_TEST_CASE("the open approval requests an agent asked for are found without loading their threads", "[store]",
                   memory_backend, compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  sequential_ids ids;
  auto asked = [](std::string agent, std::string request_id, std::string tool_call_id, std::int64_t expires_at) {
    return entry_draft{"approval_request",
                       {{"tool", "send"}, {"arguments", json::object{}}, {"expires_at", expires_at}, {"agent", agent}},
                       entry_refs::of(request_id, 1, "c-" + request_id, tool_call_id)};
  };
  auto closed = [](std::string kind, std::string request_id, std::string tool_call_id) {
    return entry_draft{
        std::move(kind), {{"verdict", "approve"}}, entry_refs::of(request_id, 1, "c-" + request_id, tool_call_id)};
  };
  thread t1("t1", 1), t2("t2", 1), t3("t3", 1);
  // t1: r1's k1 decided, k2 answered (a cancel's result), k3 still open.
  commit(store, t1,
         {asked("a", "r1", "k1", 100), asked("a", "r1", "k2", 200), asked("a", "r1", "k3", 300),
          closed("decision", "r1", "k1"), closed("tool_result", "r1", "k2")},
         10, ids);
  // t2: another agent's pause, and one of a's whose tool call id another request decided.
  commit(store, t2, {asked("b", "r2", "k1", 400), asked("a", "r3", "k1", 500), closed("decision", "r2", "k1")}, 11,
         ids);
  // t3: nothing of a's.
  commit(store, t3, {note(0)}, 12, ids);

  auto a = store.open_pauses("a");
  REQUIRE(a.has_value());
  CHECK(*a == std::vector<open_pause>{{"t1", "r1", "k3", 300}, {"t2", "r3", "k1", 500}});
  auto b = store.open_pauses("b");
  REQUIRE(b.has_value());
  CHECK(b->empty());
  auto nobody = store.open_pauses("c");
  REQUIRE(nobody.has_value());
  CHECK(nobody->empty());
}

TEMPLATE_TEST_CASE("a conversation store maps a user's chat to one thread", "[store][conversations]", memory_backend,
                   compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  conversation_store& conversations = backend.conversations();
  thread_store& threads = backend.threads();
  sequential_ids ids;
  const conversation_key key{"u1", "telegram", "chat-42"};
  auto first = conversations.get_or_create_conversation(key);
  REQUIRE(first);

  SECTION("the same key gives the same conversation and thread, every time") {
    CHECK(first->user_id == "u1");
    CHECK(first->platform == "telegram");
    CHECK(first->platform_identifier == "chat-42");
    CHECK(!first->thread_id.empty());
    CHECK(!first->archived);
    CHECK(first->last_message_at == 0);
    auto again = conversations.get_or_create_conversation(key);
    REQUIRE(again);
    CHECK(*again == *first);
    CHECK(*conversations.find_conversation(first->id) == *first);
  }
  SECTION("another chat, platform or user is another conversation") {
    for (const conversation_key& other :
         {conversation_key{"u1", "telegram", "chat-43"}, conversation_key{"u1", "whatsapp", "chat-42"},
          conversation_key{"u2", "telegram", "chat-42"}}) {
      auto c = conversations.get_or_create_conversation(other);
      REQUIRE(c);
      CHECK(c->id != first->id);
      CHECK(c->thread_id != first->thread_id);
    }
  }
  SECTION("commits to its thread move last_message_at, and the first user message names it") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "  What is the capital of France?\nAnd of Spain?")}, 1000, ids);
    commit(threads, t, {called("c1"), said("assistant", "Paris and Madrid.")}, 2000, ids);
    auto c = conversations.find_conversation(first->id);
    REQUIRE(c);
    CHECK(c->last_message_at == 2000);
    CHECK(c->title == "What is the capital of France?");
    commit(threads, t, {said("user", "Thanks")}, 3000, ids);
    CHECK(conversations.find_conversation(first->id)->title == "What is the capital of France?");
  }
  SECTION("history is the last N messages, oldest first") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "one"), called("c1"), said("assistant", "two")}, 1000, ids);
    commit(threads, t, {note(1), said("user", "three"), said("assistant", "four")}, 2000, ids);
    auto h = conversations.history(first->id, 3);
    REQUIRE(h);
    REQUIRE(h->size() == 3);
    CHECK((*h)[0].payload.at("content") == "two");
    CHECK((*h)[1].payload.at("content") == "three");
    CHECK((*h)[2].payload.at("content") == "four");
    CHECK((*h)[2] == *t.last());
    CHECK(conversations.history(first->id, 100)->size() == 4);
    CHECK(conversations.history("conv-nope", 3).error().type == "not_found");
  }
  SECTION("a conversation without messages has an empty history and trace") {
    CHECK(conversations.history(first->id, 10)->empty());
    auto tr = conversations.trace(first->id);
    REQUIRE(tr);
    CHECK(tr->log.size() == 0);
    CHECK(tr->totals == conversation_totals{});
  }
  SECTION("trace is every entry with totals") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "one"), called("c1"), called("c2")}, 1000, ids);
    commit(threads, t, {note(1), said("assistant", "two"), said("user", "three")}, 4500, ids);
    auto tr = conversations.trace(first->id);
    REQUIRE(tr);
    CHECK(tr->about.id == first->id);
    CHECK(tr->log.size() == 6);
    CHECK(*tr->log.at_seq(5) == *t.at_seq(5));
    CHECK(tr->totals == conversation_totals{.entries = 6,
                                            .messages = 3,
                                            .user_messages = 2,
                                            .assistant_messages = 1,
                                            .tool_calls = 2,
                                            .duration_ms = 3500});
  }
  SECTION("list shows the user's active conversations, most recent message first, a page at a time") {
    auto second = conversations.get_or_create_conversation({"u1", "web_chat", "tab-1"});
    auto third = conversations.get_or_create_conversation({"u1", "cli", "default"});
    auto someone_else = conversations.get_or_create_conversation({"u2", "cli", "default"});
    REQUIRE((second && third && someone_else));
    thread a(first->thread_id, 1), b(second->thread_id, 1), c(third->thread_id, 1);
    commit(threads, a, {said("user", "a")}, 3000, ids);
    commit(threads, b, {said("user", "b")}, 5000, ids);
    commit(threads, c, {said("user", "c")}, 4000, ids);
    REQUIRE(conversations.archive_conversation(third->id));

    auto page = conversations.list_conversations("u1", 10, 0);
    REQUIRE(page);
    REQUIRE(page->size() == 2);
    CHECK((*page)[0].id == second->id);
    CHECK((*page)[1].id == first->id);
    CHECK(conversations.list_conversations("u1", 1, 1)->at(0).id == first->id);
    CHECK(conversations.list_conversations("u1", 10, 2)->empty());
    CHECK(conversations.list_conversations("nobody", 10, 0)->empty());
  }
  SECTION("of conversations whose last messages share a millisecond, the one opened last is listed first") {
    auto second = conversations.get_or_create_conversation({"u1", "web_chat", "tab-1"});
    auto third = conversations.get_or_create_conversation({"u1", "cli", "default"});
    REQUIRE((second && third));
    thread a(first->thread_id, 1), b(second->thread_id, 1), c(third->thread_id, 1);
    commit(threads, c, {said("user", "c")}, 7000, ids);
    commit(threads, a, {said("user", "a")}, 7000, ids);
    commit(threads, b, {said("user", "b")}, 7000, ids);
    auto page = conversations.list_conversations("u1", 10, 0);
    REQUIRE(page);
    REQUIRE(page->size() == 3);
    CHECK((*page)[0].id == third->id);
    CHECK((*page)[1].id == second->id);
    CHECK((*page)[2].id == first->id);
  }
  SECTION("after archiving, the key opens a new conversation; the archived one stays readable") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "old")}, 1000, ids);
    auto archived = conversations.archive_conversation(first->id);
    REQUIRE(archived);
    CHECK(archived->archived);
    auto fresh = conversations.get_or_create_conversation(key);
    REQUIRE(fresh);
    CHECK(fresh->id != first->id);
    CHECK(fresh->thread_id != first->thread_id);
    CHECK(conversations.find_conversation(first->id)->archived);
    CHECK(conversations.history(first->id, 10)->size() == 1);
    CHECK(conversations.archive_conversation("conv-nope").error().type == "not_found");
  }
  SECTION("metadata is replaced and read back") {
    auto set = conversations.set_conversation_metadata(first->id, {{"agent", "helper"}});
    REQUIRE(set);
    CHECK(set->metadata == boost::json::object{{"agent", "helper"}});
    CHECK(conversations.find_conversation(first->id)->metadata == boost::json::object{{"agent", "helper"}});
    CHECK(conversations.get_or_create_conversation(key)->metadata.at("agent") == "helper");
    CHECK(conversations.set_conversation_metadata("conv-nope", {}).error().type == "not_found");
  }
  SECTION("a metadata key is claimed once: the first value stays, the others are told it") {
    REQUIRE(conversations.set_conversation_metadata(first->id, {{"title", "t"}}));
    auto won = conversations.claim_conversation_metadata(first->id, "agent", "helper");
    REQUIRE(won);
    CHECK(won->metadata == boost::json::object{{"title", "t"}, {"agent", "helper"}});
    auto lost = conversations.claim_conversation_metadata(first->id, "agent", "other");
    REQUIRE(lost);
    CHECK(lost->metadata.at("agent") == "helper");
    CHECK(conversations.find_conversation(first->id)->metadata.at("agent") == "helper");
    CHECK(conversations.claim_conversation_metadata("conv-nope", "agent", "x").error().type == "not_found");
  }
  SECTION("claimers racing on one key: exactly one wins and all of them see it") {
    constexpr int claimers = 8;
    std::vector<std::string> seen(claimers);
    std::vector<std::thread> pool;
    for (int i = 0; i < claimers; ++i)
      pool.emplace_back([&, i] {
        const boost::json::value mine(boost::json::string("agent-" + std::to_string(i)));
        auto c = conversations.claim_conversation_metadata(first->id, "agent", mine);
        if (c) seen[i] = std::string(string_field(c->metadata, "agent").value_or(""));
      });
    for (auto& p : pool) p.join();
    const std::string winner = seen[0];
    CHECK(winner.rfind("agent-", 0) == 0);
    for (const std::string& s : seen) CHECK(s == winner);
    CHECK(string_field(conversations.find_conversation(first->id)->metadata, "agent") == winner);
  }
  SECTION("delete removes the conversation, its thread and its entries") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "forget me")}, 1000, ids);
    REQUIRE(conversations.delete_conversation(first->id));
    CHECK(conversations.find_conversation(first->id).error().type == "not_found");
    CHECK(threads.load(first->thread_id).error().type == "not_found");
    CHECK(conversations.delete_conversation(first->id).error().type == "not_found");
    CHECK(conversations.get_or_create_conversation(key)->id != first->id);
  }
  SECTION("removing the thread removes the conversation that owns it") {
    thread t(first->thread_id, 1);
    commit(threads, t, {said("user", "hi")}, 1000, ids);
    CHECK(threads.remove(first->thread_id));
    CHECK(conversations.find_conversation(first->id).error().type == "not_found");
  }
}

TEMPLATE_TEST_CASE("concurrent writers lose nothing and never interleave", "[store][concurrency]", memory_backend,
                   compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  constexpr int writers = 8, commits = 25;

  SECTION("writers on their own threads all land") {
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int w = 0; w < writers; ++w)
      pool.emplace_back([&, w] {
        sequential_ids ids;
        thread t("own-" + std::to_string(w), 1);
        for (int i = 0; i < commits; ++i) {
          const std::uint64_t rev = t.rev();
          t.append({note(i), note(i)}, i, ids);
          if (!store.append(t, rev)) ++failures;
        }
      });
    for (auto& p : pool) p.join();
    CHECK(failures == 0);
    for (int w = 0; w < writers; ++w) {
      auto t = store.load("own-" + std::to_string(w));
      REQUIRE(t);
      CHECK(t->size() == 2 * commits);
    }
  }
  SECTION("writers racing on one thread each commit only on top of the latest rev") {
    std::vector<std::thread> pool;
    std::atomic<int> conflicts{0};
    std::mutex mutex;
    std::vector<std::string> unexpected;  // Catch's assertions are for the test's own thread
    for (int w = 0; w < writers; ++w)
      pool.emplace_back([&, w] {
        sequential_ids ids;
        for (int i = 0; i < commits; ++i) {
          for (;;) {  // load, append, commit; on a conflict start over
            auto loaded = store.load("shared");
            thread t = loaded ? std::move(*loaded) : thread("shared", 1);
            const std::uint64_t rev = t.rev();
            t.append(note(w * 1000 + i), i, ids);
            auto written = store.append(t, rev);
            if (written) break;
            if (written.error().type != "conflict") {
              std::lock_guard lock(mutex);
              unexpected.push_back(written.error().type + ": " + written.error().message);
              return;
            }
            ++conflicts;
          }
        }
      });
    for (auto& p : pool) p.join();
    CHECK(unexpected == std::vector<std::string>{});  // printed in full if not
    auto t = store.load("shared");
    REQUIRE(t);
    REQUIRE(t->size() == writers * commits);
    std::set<std::int64_t> seen;
    for (std::uint64_t s = 0; s < t->size(); ++s) {
      CHECK(t->at_seq(s)->seq == s);
      seen.insert(t->at_seq(s)->payload.at("n").as_int64());
    }
    CHECK(seen.size() == writers * commits);  // no entry lost or written twice
  }
}

TEMPLATE_TEST_CASE("commits through the store executor answer as append() does, without blocking the caller",
                   "[store][concurrency]", memory_backend, compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  store_executor stores(backend.store, {.threads = 4});
  constexpr int threads = 40, rounds = 5;
  sequential_ids ids;
  std::vector<thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back("exec-" + std::to_string(i), 1);
  auto commit_async = [&](const thread_view& t, std::uint64_t rev) {
    auto done = std::make_shared<std::promise<stored<std::uint64_t>>>();
    auto f = done->get_future();
    stores.append(t, rev, std::nullopt, [done](stored<std::uint64_t> r) { done->set_value(std::move(r)); });
    return f;
  };

  // Every thread's next commit is in flight at once, round after round.
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::future<stored<std::uint64_t>>> answers;
    for (thread& t : ts) {
      const std::uint64_t rev = t.rev();
      t.append(note(round), round, ids);
      answers.push_back(commit_async(t, rev));
    }
    for (std::size_t i = 0; i < answers.size(); ++i) {
      REQUIRE(answers[i].wait_for(std::chrono::seconds(20)) == std::future_status::ready);
      const auto r = answers[i].get();
      INFO("thread " << i << ": " << (r ? std::string("ok") : r.error().type + ": " + r.error().message));
      REQUIRE(r.has_value());
      CHECK(*r == ts[i].rev());
    }
  }
  for (const thread& t : ts) {
    auto loaded = backend.threads().load(t.id());
    REQUIRE(loaded.has_value());
    CHECK(loaded->size() == rounds);
  }
  SECTION("a stale commit is a conflict, and writes nothing") {
    thread stale = ts[0];
    stale.append(note(99), 99, ids);
    auto f = commit_async(stale, 1);
    REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    const auto r = f.get();
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "conflict");
    CHECK(backend.threads().load(ts[0].id())->size() == rounds);
  }
}

TEMPLATE_TEST_CASE("lease takes through the store executor answer as acquire_lease does, many at once",
                   "[store][leases][concurrency]", memory_backend, compact_memory_backend, sqlite_backend,
                   postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  store_executor stores(backend.store, {.threads = 4});
  const std::chrono::milliseconds ttl(60'000);
  constexpr int threads = 30;
  // Every take in flight at once, as agents loading their threads do.
  auto take_all = [&](const std::string& owner) {
    std::vector<std::future<stored<thread_lease>>> answers;
    for (int i = 0; i < threads; ++i) {
      auto done = std::make_shared<std::promise<stored<thread_lease>>>();
      answers.push_back(done->get_future());
      stores.acquire_lease_then("leased-" + std::to_string(i), owner, ttl, {},
                                [done](store_job_status, stored<thread_lease> r) { done->set_value(std::move(r)); });
    }
    std::vector<stored<thread_lease>> out;
    for (auto& a : answers) {
      REQUIRE(a.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
      out.push_back(a.get());
    }
    return out;
  };

  for (const auto& r : take_all("A")) {
    INFO((r ? std::string("taken") : r.error().type + ": " + r.error().message));
    REQUIRE(r.has_value());
    CHECK(r->owner == "A");
    CHECK(r->epoch == 1);
  }
  SECTION("another owner is refused each, and told who holds it") {
    for (const auto& r : take_all("B")) {
      REQUIRE(!r.has_value());
      CHECK(r.error().type == "owned");
      CHECK_THAT(r.error().message, Catch::Contains("A"));
    }
  }
  SECTION("the same owner taking them again gets the next epoch") {
    for (const auto& r : take_all("A")) {
      REQUIRE(r.has_value());
      CHECK(r->epoch == 2);
    }
  }
}

TEMPLATE_TEST_CASE("a thread's lease: one owner at a time, a new epoch per take, commits only under the current one",
                   "[store][leases]", memory_backend, compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  using std::chrono::milliseconds;
  const milliseconds ttl(1'000);
  sequential_ids ids;
  thread t("leased", 1);
  t.append(note(1), 1, ids);

  const auto a = store.acquire_lease("leased", "A", 1'000, ttl);
  REQUIRE(a.has_value());
  CHECK(a->owner == "A");
  CHECK(a->epoch == 1);
  CHECK(a->expires_at_ms == 2'000);
  REQUIRE(store.append_fenced(t, 0, *a).has_value());

  SECTION("another owner is refused while the lease lives, and told who holds it") {
    const auto b = store.acquire_lease("leased", "B", 1'500, ttl);
    REQUIRE(!b.has_value());
    CHECK(b.error().type == "owned");
    CHECK_THAT(b.error().message, Catch::Contains("A"));
  }
  SECTION("a commit renews the lease it is made under") {
    thread_lease renewing = *a;
    renewing.expires_at_ms = 5'000;
    t.append(note(2), 2, ids);
    REQUIRE(store.append_fenced(t, 1, renewing).has_value());
    CHECK(store.acquire_lease("leased", "B", 3'000, ttl).error().type == "owned");
  }
  SECTION("the same owner taking it again gets a new epoch, which fences its old one") {
    const auto again = store.acquire_lease("leased", "A", 1'500, ttl);
    REQUIRE(again.has_value());
    CHECK(again->epoch == 2);
    t.append(note(2), 2, ids);
    const auto stale = store.append_fenced(t, 1, *a);
    REQUIRE(!stale.has_value());
    CHECK(stale.error().type == "fenced");
    CHECK(store.load("leased")->size() == 1);  // nothing written
    CHECK(store.append_fenced(t, 1, *again).has_value());
  }
  SECTION("once expired, another owner takes it with the next epoch, and the old holder can write no more") {
    const auto b = store.acquire_lease("leased", "B", 2'001, ttl);
    REQUIRE(b.has_value());
    CHECK(b->owner == "B");
    CHECK(b->epoch == 2);
    t.append(note(2), 2, ids);
    const auto late = store.append_fenced(t, 1, *a);
    REQUIRE(!late.has_value());
    CHECK(late.error().type == "fenced");
    CHECK_THAT(late.error().message, Catch::Contains("B"));
    CHECK(store.load("leased")->size() == 1);
    CHECK(store.append_fenced(t, 1, *b).has_value());
  }
  SECTION("a lease given up may be taken at once; one given up by a stale holder stays") {
    store.release_lease("leased", thread_lease{"A", 7, 0});  // not the current lease: nothing happens
    CHECK(store.acquire_lease("leased", "B", 1'500, ttl).error().type == "owned");
    store.release_lease("leased", *a);
    const auto b = store.acquire_lease("leased", "B", 1'500, ttl);
    REQUIRE(b.has_value());
    CHECK(b->epoch == 2);
  }
  SECTION("leases given up without waiting may be taken once the store says so; a stale holder's stays") {
    std::vector<thread_lease> held{*a};
    for (const char* id : {"other-1", "other-2", "other-3", "kept"}) {
      const auto l = store.acquire_lease(id, "A", 1'000, ttl);
      REQUIRE(l.has_value());
      held.push_back(*l);
    }
    const std::vector<std::string> ids_of{"leased", "other-1", "other-2", "other-3"};
    // Given up one after the other without waiting: a store that batches
    // them may carry several in one call; a stale release of "kept" rides
    // along. Shared with the callbacks: a store that answers after a failed
    // wait must not find them gone.
    auto given_up = std::make_shared<std::vector<std::promise<void>>>(ids_of.size() + 1);
    for (std::size_t i = 0; i < ids_of.size(); ++i) {
      if (i == 2)
        store.release_lease_queued("kept", thread_lease{"A", 9, 0}, [given_up] { given_up->back().set_value(); });
      store.release_lease_queued(ids_of[i], held[i], [given_up, i] { (*given_up)[i].set_value(); });
    }
    for (auto& p : *given_up) REQUIRE(p.get_future().wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    for (const auto& id : ids_of) {
      const auto b = store.acquire_lease(id, "B", 1'500, ttl);
      REQUIRE(b.has_value());
      CHECK(b->epoch == 2);
    }
    CHECK(store.acquire_lease("kept", "B", 1'500, ttl).error().type == "owned");
  }
  SECTION("a commit under no lease of a leased thread is fenced; unfenced commits are not checked") {
    t.append(note(2), 2, ids);
    CHECK(store.append_fenced(t, 1, thread_lease{"C", 1, 9'999}).error().type == "fenced");
    CHECK(store.append(t, 1).has_value());  // tools that write without a lease (fork, import) are not agents
  }
  SECTION("queued commits carry the fence too") {
    store_executor stores(backend.store, {.threads = 2});
    const auto b = store.acquire_lease("leased", "B", 2'001, ttl);
    REQUIRE(b.has_value());
    t.append(note(2), 2, ids);
    auto done = std::make_shared<std::promise<stored<std::uint64_t>>>();
    auto f = done->get_future();
    stores.append(t, 1, *a, [done](stored<std::uint64_t> r) { done->set_value(std::move(r)); });
    REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    const auto r = f.get();
    REQUIRE(!r.has_value());
    CHECK(r.error().type == "fenced");
  }
}

TEMPLATE_TEST_CASE("a durable store keeps everything across a reopen, as after a restart", "[store]", sqlite_backend,
                   postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  sequential_ids ids;
  thread t("t1", 1);
  for (int i = 0; i < 50; ++i) commit(backend.threads(), t, {note(i)}, i, ids);
  auto c = backend.conversations().get_or_create_conversation({"u", "cli", "x"});
  REQUIRE(c);
  backend.reopen();
  auto loaded = backend.threads().load("t1");
  REQUIRE(loaded);
  CHECK(loaded->size() == 50);
  CHECK(loaded->rev() == 50);
  for (std::uint64_t i = 0; i < 50; ++i) CHECK(loaded->at_seq(i)->payload.at("n") == static_cast<std::int64_t>(i));
  CHECK(*backend.conversations().get_or_create_conversation({"u", "cli", "x"}) == *c);
}

namespace {

// The owner id a process of this host that has since exited made: a child
// forked, named while it runs (or waits to be reaped), then reaped.
std::string exited_process_owner_id() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  std::string owner = process_owner_id(child, "rt-crashed");
  REQUIRE(waitpid(child, nullptr, 0) == child);
  return owner;
}

}  // namespace

// A crash leaves its leases live until they expire; the next process on
// the same host must not be refused for the rest of the ttl.
TEMPLATE_TEST_CASE("a lease whose holder died on this host is taken at once, and a live holder's is refused",
                   "[store][leases]", memory_backend, compact_memory_backend, sqlite_backend, postgres_backend) {
  TestType backend;
  REQUIRE_BACKEND(backend);
  thread_store& store = backend.threads();
  const std::chrono::milliseconds ttl(60'000);
  const std::string next = process_owner_id(::getpid(), "rt-next");
  const std::string host = next.substr(0, next.find('/'));

  SECTION("a holder that has exited") {
    const std::string dead = exited_process_owner_id();
    REQUIRE(store.acquire_lease("t", dead, 1'000, ttl));
    auto taken = store.acquire_lease("t", next, 2'000, ttl);
    INFO((taken ? std::string("taken") : taken.error().message));
    REQUIRE(taken);
    CHECK(*taken == thread_lease{next, 2, 2'000 + ttl.count()});
  }
  SECTION("a holder whose pid another process has since") {
    const auto start = process_start_time(::getpid());
    REQUIRE(start);
    const std::string before = host + "/" + std::to_string(::getpid()) + "/" + std::to_string(*start + 1) + "/rt-old";
    REQUIRE(store.acquire_lease("t", before, 1'000, ttl));
    auto taken = store.acquire_lease("t", next, 2'000, ttl);
    REQUIRE(taken);
    CHECK(taken->epoch == 2);
  }
  SECTION("a live holder: this process, another runtime in it") {
    REQUIRE(store.acquire_lease("t", process_owner_id(::getpid(), "rt-other"), 1'000, ttl));
    auto refused = store.acquire_lease("t", next, 2'000, ttl);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().type == "owned");
  }
  SECTION("a holder on another host, or named by its embedder, is not judged") {
    const std::string dead = exited_process_owner_id();
    for (const std::string& holder : {"elsewhere.invalid" + dead.substr(dead.find('/')), std::string("worker-1")}) {
      const std::string id = "t-" + holder;
      REQUIRE(store.acquire_lease(id, holder, 1'000, ttl));
      auto refused = store.acquire_lease(id, next, 2'000, ttl);
      REQUIRE_FALSE(refused);
      CHECK(refused.error().type == "owned");
    }
  }
}
