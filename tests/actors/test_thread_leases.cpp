// One writer per thread across processes: two runtimes on one SQLite file
// stand for two processes (each opens the file with a connection of its
// own, as a process would). The one holding a thread's lease writes; the
// other is told who does, takes over once the lease is given up or runs
// out, and the one that lost it can never write again.

#include "support/runtime_harness.hpp"

#include "runtime/random_ids.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/sqlite_file.hpp"

#include <atomic>
#include <filesystem>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// A SQLite file of the test's own, and a connection to read it as a third party would.
struct shared_file : sqlite_file {
  shared_file() : sqlite_file("troupe-leases") {}
  std::shared_ptr<sqlite_store> store = std::make_shared<sqlite_store>(path.string());
  ~shared_file() { store.reset(); }
};

std::shared_ptr<scripted_provider> echo_model() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("tool said " + s.messages.back().content);
    if (question_in(s).rfind("use the tool", 0) == 0) return scripted_reply::tools({call("t1", "wait")});
    return scripted_reply::text("echo: " + question_in(s));
  });
}

runtime_options process(std::shared_ptr<thread_store> store, std::string owner,
                        std::chrono::milliseconds ttl = std::chrono::seconds(60)) {
  return {.provider = echo_model(), .store = std::move(store), .owner_id = std::move(owner), .lease_ttl = ttl};
}

void spin_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }  // time passing is the point: a lease runs out
}

}  // namespace

TEST_CASE("a thread held by another process is refused with thread_owned_elsewhere, until it is given up") {
  shared_file file;
  auto first_store = std::make_shared<sqlite_store>(file.path.string());
  auto second_store = std::make_shared<sqlite_store>(file.path.string());
  auto first = std::make_unique<runtime>(process(first_store, "first"));
  runtime second(process(second_store, "second"));
  agent a1 = first->spawn_agent({.id = "a", .model = "m"});
  agent a2 = second.spawn_agent({.id = "a", .model = "m"});

  CHECK(answer_of(must_reply(a1.ask("hello"))) == "echo: hello");
  const reply refused = must_reply(a2.ask("me too"));
  CHECK(error_type_of(refused) == "thread_owned_elsewhere");
  CHECK_THAT(std::get<error_info>(refused.outcome).message, Catch::Contains("first"));

  SECTION("the holder that stops gives its leases up: the other takes the thread at once, and continues it") {
    first.reset();
    CHECK(answer_of(must_reply(a2.ask("now me"))) == "echo: now me");
    const auto t = file.store->load("a:default");
    REQUIRE(t.has_value());
    CHECK(t->size() == 4);  // both turns, one after the other
    CHECK(t->at_seq(0)->payload.at("content") == "hello");
    CHECK(t->at_seq(2)->payload.at("content") == "now me");
  }
  SECTION("other threads are not held: the second process works on them meanwhile") {
    CHECK(answer_of(must_reply(a2.ask("elsewhere", {.thread_id = "a:other"}))) == "echo: elsewhere");
  }
}

TEST_CASE("a lease that runs out is taken over, and its old holder can never write under it again") {
  shared_file file;
  gate tool_may_finish;
  std::atomic<bool> tool_started{false};
  auto first_store = std::make_shared<sqlite_store>(file.path.string());
  auto second_store = std::make_shared<sqlite_store>(file.path.string());
  runtime first(process(first_store, "first", std::chrono::milliseconds(200)));
  runtime second(process(second_store, "second"));
  first.tools().add(make_tool("wait", [&](const json::object&, const tool_context&) {
    tool_started = true;
    tool_may_finish.wait();
    return json::value("late");
  }));
  agent a1 = first.spawn_agent({.id = "a", .model = "m", .tools = {"wait"}});
  agent a2 = second.spawn_agent({.id = "a", .model = "m"});

  // The first process is in the middle of a turn, its tool running, when its
  // lease runs out (it stands for a process paused or cut off from the store).
  const request stuck = a1.ask("use the tool");
  while (!tool_started) std::this_thread::yield();
  spin_for(std::chrono::milliseconds(300));

  CHECK(answer_of(must_reply(a2.ask("taking over"))) == "echo: taking over");
  const std::uint64_t size_after_takeover = file.store->load("a:default")->size();

  tool_may_finish.open();
  const reply lost = must_reply(stuck);
  CHECK(error_type_of(lost) == "lease_lost");
  CHECK_THAT(std::get<error_info>(lost.outcome).message, Catch::Contains("second"));
  const auto t = file.store->load("a:default");
  REQUIRE(t.has_value());
  CHECK(t->size() == size_after_takeover);  // nothing of the old holder's went in after the takeover
  CHECK(every_call_answered(*t));           // the taker repaired the interrupted tool call, as after a crash

  SECTION("asked again, the old holder is told who owns the thread now") {
    CHECK(error_type_of(must_reply(a1.ask("still me?"))) == "thread_owned_elsewhere");
  }
}
