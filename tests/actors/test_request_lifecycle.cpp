// How a request ends, whatever happens around it: callbacks that throw,
// deadlines, brokers and executors that die, nested agents, many asks,
// handles used while the runtime goes away.

#include "support/agent_stats.hpp"
#include "support/runtime_harness.hpp"

#include "actors/detail/runtime_impl.hpp"
#include "runtime/store/memory_store.hpp"

#include <caf/default_attachable.hpp>

#include <atomic>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

std::size_t pending_in_brokers(runtime& rt) {
  caf::scoped_actor self{*rt.internals().system};
  std::size_t pending = 0;
  for (const auto& b : rt.internals().brokers.all())
    self->request(b, patience, stats_atom::value).receive([&](std::size_t n) { pending += n; }, [](caf::error&) {});
  return pending;
}

// Monitors the brokers hold on an agent (removes them: for the end of a test).
std::size_t broker_monitors_on(runtime& rt, const agent_actor& a) {
  std::size_t n = 0;
  for (const auto& b : rt.internals().brokers.all()) {
    const caf::default_attachable::observe_token tk{b.address(), caf::default_attachable::monitor};
    n += caf::actor_cast<caf::abstract_actor*>(a)->detach(caf::attachable::token{tk});
  }
  return n;
}

std::shared_ptr<scripted_provider> echo_model() {
  return std::make_shared<scripted_provider>(
      [](const llm_stream& s) { return scripted_reply::text("echo: " + question_in(s)); });
}

}  // namespace

TEST_CASE("a callback that throws ends its request with callback_failed; the runtime carries on") {
  auto sink = std::make_shared<recording_sink>();
  runtime rt({.provider = echo_model(), .telemetry = sink, .scheduler_threads = 1});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});

  SECTION("on_reply") {
    ask_options o;
    o.on_reply = [](const reply&) { throw std::runtime_error("the embedder's bug"); };
    const reply r = must_reply(a.ask("hello", o));
    CHECK(error_type_of(r) == "callback_failed");
    CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("the embedder's bug"));
  }
  SECTION("on_event, while the request streams") {
    ask_options o;
    o.on_event = [](const stream_event& e) {
      if (std::holds_alternative<delta_event>(e)) throw std::logic_error("cannot render");
    };
    CHECK(error_type_of(must_reply(a.ask("hello", o))) == "callback_failed");
  }
  CHECK(sink->wait_for(telemetry_kind::callback_failed, 1, patience));
  // The same broker (one scheduler thread: one broker) still answers.
  CHECK(answer_of(must_reply(a.ask("still there?"))) == "echo: still there?");
  CHECK(pending_in_brokers(rt) == 0);
}

TEST_CASE("a request id still running is refused as a duplicate; the running request goes on") {
  auto model =
      std::make_shared<scripted_provider>(std::vector<scripted_reply>{stalls(), scripted_reply::text("after")});
  runtime rt({.provider = model, .scheduler_threads = 1});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  gate streaming;
  ask_options first = open_on_first_delta(streaming);
  first.request_id = "r1";
  request running = a.ask("hi", first);
  REQUIRE(streaming.wait());

  ask_options again;
  again.request_id = "r1";
  request duplicate = a.ask("hi again", again);
  const reply refused = must_reply(duplicate);
  CHECK(error_type_of(refused) == "duplicate_request");
  CHECK(refused.request_id == "r1");

  SECTION("the refused handle's cancel leaves the running request alone") {
    duplicate.cancel("cancelled through the duplicate");
    running.cancel("cancelled by its owner");
    const reply r = must_reply(running);
    CHECK(error_type_of(r) == "cancelled");
    CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("by its owner"));
  }
  SECTION("the running request still gets its own answer, and its id is free once it ended") {
    running.cancel("done with it");
    CHECK(error_type_of(must_reply(running)) == "cancelled");
    ask_options later;
    later.request_id = "r1";
    CHECK(answer_of(must_reply(a.ask("once more", later))) == "after");
  }
  CHECK(pending_in_brokers(rt) == 0);
}

TEST_CASE("a broker that dies ends the requests it held and is replaced") {
  auto sink = std::make_shared<recording_sink>();
  auto model =
      std::make_shared<scripted_provider>(std::vector<scripted_reply>{stalls(), scripted_reply::text("again")});
  runtime rt({.provider = model, .telemetry = sink, .scheduler_threads = 1});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  gate streaming;
  request r = a.ask("hi", open_on_first_delta(streaming));
  REQUIRE(streaming.wait());
  caf::anon_send_exit(rt.internals().brokers.all().at(0), caf::exit_reason::kill);
  CHECK(error_type_of(must_reply(r)) == "broker_crashed");
  REQUIRE(sink->wait_for(telemetry_kind::actor_restarted, 1, patience));
  r.cancel();
  // The agent's thread is still busy with the first ask until it is cancelled
  // or ends; a new thread is free.
  ask_options other;
  other.thread_id = "other";
  CHECK(answer_of(must_reply(a.ask("hello", other))) == "again");
}

TEST_CASE("every request has a deadline") {
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{stalls(), stalls(), scripted_reply::text("on time")});
  runtime rt({.provider = model});

  SECTION("from the ask") {
    agent a = rt.spawn_agent({.id = "a", .model = "m"});
    ask_options o;
    o.deadline = std::chrono::milliseconds(50);
    const reply r = must_reply(a.ask("slow", o));
    CHECK(error_type_of(r) == "deadline_exceeded");
  }
  SECTION("from the agent spec, and the agent stops working on it") {
    agent a = rt.spawn_agent({.id = "a", .model = "m", .request_deadline = std::chrono::milliseconds(50)});
    CHECK(error_type_of(must_reply(a.ask("slow"))) == "deadline_exceeded");
    // The expired request was cancelled, so the thread takes the next ask.
    CHECK(error_type_of(must_reply(a.ask("slow again"))) == "deadline_exceeded");
    ask_options o;
    o.deadline = patience;
    CHECK(answer_of(must_reply(a.ask("quick", o))) == "on time");
  }
  CHECK(pending_in_brokers(rt) == 0);
}

TEST_CASE("sequential asks leave nothing behind: no monitor, no pending request") {
  runtime rt({.provider = echo_model()});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  for (int i = 0; i < 1000; ++i) REQUIRE(must_reply(a.ask("q" + std::to_string(i))).ok());
  CHECK(pending_in_brokers(rt) == 0);
  CHECK(stats_of(rt, "a").running_requests == 0);
  const auto actor = rt.internals().ctx->agents.find("a");
  REQUIRE(actor);
  CHECK(broker_monitors_on(rt, *actor) == 0);
}

TEST_CASE("an agent holds a bounded number of threads; the store keeps the rest") {
  auto sink = std::make_shared<recording_sink>();
  runtime rt({.provider = echo_model(), .telemetry = sink});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .max_loaded_threads = 2});
  for (int i = 0; i < 5; ++i) {
    ask_options o;
    o.thread_id = "t" + std::to_string(i);
    REQUIRE(must_reply(a.ask("first on " + o.thread_id, o)).ok());
  }
  CHECK(stats_of(rt, "a").loaded_threads <= 2);
  CHECK(sink->count(telemetry_kind::thread_unloaded) >= 3);

  SECTION("an unloaded thread continues where it was") {
    ask_options o;
    o.thread_id = "t0";
    CHECK(answer_of(must_reply(a.ask("second on t0", o))) == "echo: second on t0");
    const auto t = a.snapshot("t0");
    REQUIRE(t);
    CHECK(t->size() == 4);
  }
  SECTION("a snapshot loads nothing") {
    for (int i = 0; i < 100; ++i) {
      const auto t = a.snapshot("never-asked-" + std::to_string(i));
      REQUIRE(t);
      CHECK(t->size() == 0);
    }
    const auto t1 = a.snapshot("t1");
    REQUIRE(t1);
    CHECK(t1->size() == 2);
    CHECK(stats_of(rt, "a").loaded_threads <= 2);
  }
}

TEST_CASE("an agent that unloads its thread after every ask continues it from a compact memory store") {
  auto sink = std::make_shared<recording_sink>();
  auto store = std::make_shared<memory_store>(memory_form::compact);
  runtime rt({.provider = echo_model(), .store = store, .telemetry = sink});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .max_loaded_threads = 0});
  ask_options o;
  o.thread_id = "t";
  for (int i = 0; i < 3; ++i)
    CHECK(answer_of(must_reply(a.ask("q" + std::to_string(i), o))) == "echo: q" + std::to_string(i));
  CHECK(stats_of(rt, "a").loaded_threads == 0);
  CHECK(sink->count(telemetry_kind::thread_unloaded) == 3);
  auto t = store->load("t");
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 6);
  CHECK(string_field(t->at_seq(4)->payload, "content") == "q2");
  CHECK(t->last_assistant_text() == "echo: q2");
}

TEST_CASE("an agent used as a tool holds no tool worker while it waits") {
  auto expert_model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("the expert looked it up");
    return scripted_reply::tools({call("t", "lookup")});
  });
  auto lead_model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("Answer: " + s.messages.back().content);
    return scripted_reply::tools({call("t", "ask_expert", {{"question", "2+2"}})});
  });
  const std::size_t workers = GENERATE(1, 8);
  runtime rt({.tool_workers = workers});
  // The expert's own tool blocks: it needs a worker while the lead's call waits.
  rt.tools().add(make_tool("lookup", [](const json::object&, const tool_context&) { return json::value("4"); }));
  // Longer than must_reply's patience: a stalled nested call fails the test.
  rt.add_agent_tool("ask_expert", "expert", "Asks the expert.", std::chrono::minutes(2));
  rt.spawn_agent({.id = "expert", .model = "m", .tools = {"lookup"}, .provider = expert_model});
  std::vector<request> asked;
  for (std::size_t i = 0; i < workers; ++i) {
    agent lead = rt.spawn_agent(
        {.id = "lead" + std::to_string(i), .model = "m", .tools = {"ask_expert"}, .provider = lead_model});
    asked.push_back(lead.ask("what is 2+2?"));
  }
  for (const auto& r : asked) CHECK(answer_of(must_reply(r)) == "Answer: the expert looked it up");
}

TEST_CASE("a request never goes to an executor that has died") {
  auto model = std::make_shared<scripted_provider>(
      [](const llm_stream& s) { return scripted_reply::text("echo: " + question_in(s)); });
  runtime rt({.provider = model, .executors = 1});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  for (int round = 0; round < 20; ++round) {
    const auto dead = rt.internals().ctx->llm_executors.pick(0);
    caf::scoped_actor self{*rt.internals().system};
    self->send_exit(dead, caf::exit_reason::kill);
    self->wait_for(dead);
    // Asked right after its death, before anything else noticed it.
    CHECK(answer_of(must_reply(a.ask("round " + std::to_string(round)))) == "echo: round " + std::to_string(round));
  }
}

TEST_CASE("a model call keeps the agent's own provider alive after the agent is gone") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{stalls()});
  std::weak_ptr<scripted_provider> watched = model;
  runtime rt;
  agent a = rt.spawn_agent({.id = "a", .model = "m", .restart = restart_policy::temporary, .provider = model});
  model.reset();
  gate streaming;
  request r = a.ask("hi", open_on_first_delta(streaming));
  REQUIRE(streaming.wait());
  const auto actor = rt.internals().ctx->agents.find("a");
  REQUIRE(actor);
  caf::anon_send_exit(*actor, caf::exit_reason::kill);
  CHECK(error_type_of(must_reply(r)) == "agent_crashed");
  // The spec is gone with the agent; the call still runs in the executor.
  CHECK_FALSE(watched.expired());
  rt.shutdown();
  CHECK(watched.expired());
}

TEST_CASE("handles may be used while the runtime is destroyed") {
  for (int round = 0; round < 20; ++round) {
    auto rt = std::make_unique<runtime>(runtime_options{.provider = echo_model()});
    agent a = rt->spawn_agent({.id = "a", .model = "m"});
    std::atomic<bool> go{false};
    std::vector<request> asked;
    std::thread asker([&] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 200; ++i) asked.push_back(a.ask("q"));
    });
    go = true;
    rt.reset();
    asker.join();
    for (const auto& r : asked) {
      const reply got = must_reply(r);
      // 200 asks at once on one thread may also overflow its queue before the shutdown reaches them.
      if (!got.ok())
        CHECK_THAT(std::get<error_info>(got.outcome).type, Catch::Equals("shutdown") || Catch::Equals("queue_full"));
    }
  }
}
