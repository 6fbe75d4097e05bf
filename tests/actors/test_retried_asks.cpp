// Asks repeated as retries (ask_options::retry) under the id of a request
// the thread holds already, as a caller repeats one whose answer was lost
// with the process that ran it: nothing of the request is committed twice.
// The thread is left in the store as that process left it.

#include "support/runtime_harness.hpp"
#include "support/store_cases.hpp"

#include "runtime/store/memory_store.hpp"

#include <atomic>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// "echo: QUESTION", or after a tool's result "after: RESULT"; a question
// "stall" gets no answer until cancelled. Keeps the number of user
// messages in each call's context.
struct echo_model {
  std::mutex m;
  std::vector<std::size_t> user_messages;
  std::shared_ptr<scripted_provider> provider = std::make_shared<scripted_provider>([this](const llm_stream& s) {
    std::size_t users = 0;
    for (const llm_message& message : s.messages) users += message.role == "user";
    {
      std::lock_guard lock(m);
      user_messages.push_back(users);
    }
    if (s.messages.back().role == "tool") return scripted_reply::text("after: " + s.messages.back().content);
    if (question_in(s) == "stall") return stalls();
    return scripted_reply::text("echo: " + question_in(s));
  });
  std::vector<std::size_t> calls() {
    std::lock_guard lock(m);
    return user_messages;
  }
};

ask_options retry_of(std::string request_id) {
  return {.thread_id = "t", .request_id = std::move(request_id), .retry = true};
}

entry_draft question(const std::string& request_id, std::string text) {
  return {message_payload{"user", std::move(text), {}, {}, {}}, entry_refs::of(request_id, 1)};
}

// Thread "t" as a process that died mid-request left it in the store.
void left_behind(thread_store& store, std::vector<entry_draft> drafts) {
  thread t("t", 1);
  sequential_ids ids;
  commit(store, t, std::move(drafts), 1, ids);
}

// Asks "stall" as r1 on thread "t", and returns once its model call runs.
request stalled(agent& a, gate& streaming) {
  ask_options o = open_on_first_delta(streaming);
  o.thread_id = "t";
  o.request_id = "r1";
  request running = a.ask("stall", o);
  REQUIRE(streaming.wait());
  return running;
}

std::size_t size_of(thread_store& store) {
  auto t = store.load("t");
  REQUIRE(t);
  return t->size();
}

std::size_t questions_in(thread_store& store) {
  auto t = store.load("t");
  REQUIRE(t);
  std::size_t n = 0;
  for (const entry* e : t->of_kind(entry_kind::message)) n += e->payload.string("role") == "user";
  return n;
}

}  // namespace

TEST_CASE("a retried ask of a request that ended is answered as it ended, and commits nothing") {
  echo_model model;
  auto store = std::make_shared<memory_store>();
  runtime rt({.provider = model.provider, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});

  SECTION("with its answer") {
    REQUIRE(answer_of(must_reply(a.ask("hello", {.thread_id = "t", .request_id = "r1"}))) == "echo: hello");
    const std::size_t size = size_of(*store);
    CHECK(answer_of(must_reply(a.ask("hello", retry_of("r1")))) == "echo: hello");
    CHECK(model.calls().size() == 1);
    CHECK(size_of(*store) == size);
  }
  SECTION("with its error") {
    gate streaming;
    request running = stalled(a, streaming);
    running.cancel("the caller gave up");
    const reply ended = must_reply(running);
    REQUIRE(error_type_of(ended) == "cancelled");
    const std::size_t size = size_of(*store);
    const reply again = must_reply(a.ask("stall", retry_of("r1")));
    CHECK(again.outcome == ended.outcome);
    CHECK(model.calls().size() == 1);
    CHECK(size_of(*store) == size);
  }
}

TEST_CASE("a retried ask whose question its dead process committed goes on from the question, asked once") {
  echo_model model;
  auto store = std::make_shared<memory_store>();
  left_behind(*store, {question("r1", "hello")});
  runtime rt({.provider = model.provider, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});

  const reply r = must_reply(a.ask("hello", retry_of("r1")));
  CHECK(answer_of(r) == "echo: hello");
  CHECK(r.iterations == 1);
  CHECK(model.calls() == std::vector<std::size_t>{1});  // the model read the question once
  auto t = store->load("t");
  REQUIRE(t);
  REQUIRE(t->size() == 2);
  CHECK(t->last()->refs.request_id() == "r1");
  CHECK(t->last_assistant_text() == "echo: hello");
  // An ended request is answered as it ended from now on.
  CHECK(answer_of(must_reply(a.ask("hello", retry_of("r1")))) == "echo: hello");
  CHECK(size_of(*store) == 2);
}

TEST_CASE("an ask under a request id the thread holds, not marked as a retry, is a new question") {
  echo_model model;
  auto store = std::make_shared<memory_store>();
  left_behind(*store, {question("r1", "hello")});
  runtime rt({.provider = model.provider, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  CHECK(answer_of(must_reply(a.ask("hello", {.thread_id = "t", .request_id = "r1"}))) == "echo: hello");
  CHECK(questions_in(*store) == 2);
}

TEST_CASE("a retried ask whose process died while its tool ran goes on: the call is interrupted, not run again") {
  echo_model model;
  auto store = std::make_shared<memory_store>();
  left_behind(*store, {question("r1", "look it up"),
                       entry_draft("tool_call", {{"name", "search"}, {"arguments", json::object{}}},
                                   entry_refs::of("r1", 1, "c1", "t1"))});
  runtime rt({.provider = model.provider, .store = store});
  std::atomic<int> searches{0};
  rt.tools().add(make_tool("search", [&](const json::object&, const tool_context&) {
    ++searches;
    return json::value("found");
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"search"}});

  const reply r = must_reply(a.ask("look it up", retry_of("r1")));
  CHECK_THAT(answer_of(r), Catch::StartsWith("after: ") && Catch::Contains("interrupted"));
  CHECK(r.iterations == 2);
  CHECK(searches == 0);
  CHECK(model.calls() == std::vector<std::size_t>{1});
  auto t = store->load("t");
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0]->refs.request_id() == "r1");
  CHECK(t->last()->refs.request_id() == "r1");
  CHECK(t->last()->refs.iteration() == 2);
  CHECK(questions_in(*store) == 1);
}

TEST_CASE("a retried ask of a paused request is answered as paused, and commits nothing") {
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done: " + s.messages.back().content);
    return scripted_reply::tools({call("s2", "send", {{"to", "bob"}})});
  });
  auto store = std::make_shared<memory_store>();
  runtime rt({.provider = model, .store = store});
  std::atomic<int> sends{0};
  rt.tools().add(make_tool("send", [&](const json::object&, const tool_context&) {
    ++sends;
    return json::value("sent");
  }));
  agent_spec spec{.id = "a", .model = "m", .tools = {"send"}};
  spec.approvals["send"] = approval_rule{approval_mode::always};
  agent a = rt.spawn_agent(spec);
  const reply paused = must_reply(a.ask("mail bob", {.thread_id = "t", .request_id = "r1"}));
  REQUIRE(paused.paused());
  const std::size_t size = size_of(*store);

  const reply again = must_reply(a.ask("mail bob", retry_of("r1")));
  REQUIRE(again.paused());
  CHECK(error_type_of(again) == "awaiting_input");
  REQUIRE(again.pending.size() == 1);
  CHECK(again.pending[0].tool_call_id == "s2");
  CHECK(size_of(*store) == size);
  CHECK(sends == 0);
}

TEST_CASE("a retried ask cut off before other requests went on in its thread ends interrupted") {
  echo_model model;
  auto store = std::make_shared<memory_store>();
  left_behind(*store,
              {question("r1", "first"), question("r2", "second"),
               entry_draft(message_payload{"assistant", "echo: second", {}, {}, {}}, entry_refs::of("r2", 1, "c2"))});
  runtime rt({.provider = model.provider, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});

  const reply r = must_reply(a.ask("first", retry_of("r1")));
  CHECK(error_type_of(r) == "interrupted");
  CHECK(model.calls().empty());
  auto t = store->load("t");
  REQUIRE(t);
  REQUIRE(t->size() == 4);
  CHECK(t->last()->kind == entry_kind::error);
  CHECK(t->last()->refs.request_id() == "r1");
  CHECK(must_reply(a.ask("first", retry_of("r1"))).outcome == r.outcome);
  CHECK(size_of(*store) == 4);
}

TEST_CASE("a retried ask of a request its agent was stopped under goes on from where it stood") {
  auto store = std::make_shared<memory_store>();
  {
    echo_model stalling;
    runtime rt({.provider = stalling.provider, .store = store});
    agent a = rt.spawn_agent({.id = "a", .model = "m"});
    gate streaming;
    request running = stalled(a, streaming);
    rt.shutdown();
    REQUIRE(error_type_of(must_reply(running)) == "shutdown");
  }
  auto stopped = store->load("t");
  REQUIRE(stopped);
  REQUIRE(stopped->last()->kind == entry_kind::error);

  auto answers = std::make_shared<scripted_provider>(
      [](const llm_stream& s) { return scripted_reply::text("echo: " + question_in(s)); });
  runtime rt({.provider = answers, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  const reply r = must_reply(a.ask("stall", retry_of("r1")));
  CHECK(answer_of(r) == "echo: stall");
  CHECK(r.iterations == 1);
  CHECK(questions_in(*store) == 1);
  CHECK(size_of(*store) == stopped->size() + 1);
}
