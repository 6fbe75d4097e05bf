// The agent loop through the actor system, with scripted models: turns, tools,
// queueing, concurrency, cancellation, timeouts and tool failures.

#include "support/runtime_harness.hpp"

#include <atomic>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

TEST_CASE("a single turn returns the model's answer and commits it") {
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::text("hello there", token_usage{12, 3})});
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .system_prompt = "be nice"});

  const reply r = must_reply(a.ask("hi"));
  CHECK(answer_of(r) == "hello there");
  CHECK(r.usage == token_usage{12, 3});
  const auto t = a.snapshot();
  REQUIRE(t);
  REQUIRE(t->size() == 2);
  CHECK(t->at_seq(0)->payload.at("content") == "hi");
  CHECK(t->at_seq(1)->payload.at("content") == "hello there");
}

TEST_CASE("a tool call makes the round trip through the tool executor") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{
      scripted_reply::tools({call("t1", "add", {{"a", 2}, {"b", 3}})}), scripted_reply::text("5")});
  runtime rt({.provider = model});
  std::atomic<int> runs{0};
  for (bool blocking : {true, false}) {
    rt.tools().add(make_tool(
        blocking ? "add" : "add_inline",
        [&](const json::object& args, const tool_context&) {
          ++runs;
          return json::value(args.at("a").as_int64() + args.at("b").as_int64());
        },
        blocking, object_schema({{"a", "integer"}, {"b", "integer"}})));
  }
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"add"}});

  CHECK(answer_of(must_reply(a.ask("2+3?"))) == "5");
  CHECK(runs == 1);
  const auto t = a.snapshot();
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0]->payload.at("result") == 5);
}

TEST_CASE("parallel tools that finish out of order are committed in call order") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{
      scripted_reply::tools({call("first", "slow"), call("second", "fast")}), scripted_reply::text("ok")});
  runtime rt({.provider = model});
  gate fast_done;
  rt.tools().add(make_tool("slow", [&](const json::object&, const tool_context&) {
    if (!fast_done.wait()) throw std::runtime_error("fast never finished: the tools did not run in parallel");
    return json::value("slow result");
  }));
  rt.tools().add(make_tool("fast", [&](const json::object&, const tool_context&) {
    fast_done.open();
    return json::value("fast result");
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"slow", "fast"}});

  CHECK(answer_of(must_reply(a.ask("go"))) == "ok");
  const auto results = a.snapshot()->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 2);
  CHECK(results[0]->refs.at("tool_call_id") == "first");
  CHECK(results[0]->payload.at("result") == "slow result");
  CHECK(results[1]->refs.at("tool_call_id") == "second");
}

TEST_CASE("asks on one thread queue in order; asks on different threads run at once") {
  gate release;
  std::atomic<int> entered{0};
  gate both_entered;
  // Each turn calls the "hold" tool, which waits until the test releases it.
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done: " + question_in(s));
    return scripted_reply::tools({call("h", "hold")});
  });
  runtime rt({.provider = model});
  rt.tools().add(make_tool("hold", [&](const json::object&, const tool_context&) {
    if (++entered == 2) both_entered.open();
    release.wait();
    return json::value("held");
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"hold"}});

  SECTION("three asks on one thread complete one after another, none refused as busy") {
    std::vector<request> asks;
    for (int i = 0; i < 3; ++i) asks.push_back(a.ask("q" + std::to_string(i)));
    release.open();
    for (auto& r : asks) must_reply(r);
    const auto users = a.snapshot()->of_kind(entry_kind::message);
    std::vector<std::string> order;
    for (const entry* e : users)
      if (e->payload.at("role") == "user") order.emplace_back(e->payload.at("content").as_string());
    CHECK(order == std::vector<std::string>{"q0", "q1", "q2"});
    CHECK(every_call_answered(*a.snapshot()));
  }
  SECTION("two threads of one agent run their tools at the same time") {
    ask_options on_x, on_y;
    on_x.thread_id = "x";
    on_y.thread_id = "y";
    request rx = a.ask("on x", on_x);
    request ry = a.ask("on y", on_y);
    CHECK(both_entered.wait());  // would time out if the second waited for the first
    release.open();
    CHECK(answer_of(must_reply(rx)) == "done: on x");
    CHECK(answer_of(must_reply(ry)) == "done: on y");
  }
}

TEST_CASE("an ask beyond the queue limit is refused with queue_full") {
  gate release;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done");
    return scripted_reply::tools({call("h", "hold")});
  });
  runtime rt({.provider = model});
  rt.tools().add(make_tool("hold", [&](const json::object&, const tool_context&) {
    release.wait();
    return json::value(1);
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"hold"}, .max_queued_asks = 1});
  request running = a.ask("1");
  request queued = a.ask("2");
  const reply refused = must_reply(a.ask("3"));
  CHECK(error_type_of(refused) == "queue_full");
  release.open();
  must_reply(running);
  CHECK(answer_of(must_reply(queued)) == "done");
}

TEST_CASE("cancelling a request mid-stream ends it and drops what comes late") {
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{stalls("partial "), scripted_reply::text("next answer")});
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  gate streaming;
  const ask_options o = open_on_first_delta(streaming);
  request r = a.ask("tell me a long story", o);
  REQUIRE(streaming.wait());
  r.cancel("changed my mind");

  const reply got = must_reply(r);
  CHECK(error_type_of(got) == "cancelled");
  CHECK(std::get<error_info>(got.outcome).message == "changed my mind");
  const auto t = a.snapshot();
  CHECK(t->of_kind(entry_kind::message).size() == 1);  // the partial text was never committed
  CHECK(t->last()->kind == "error");
  // The thread goes on.
  CHECK(answer_of(must_reply(a.ask("something else"))) == "next answer");
}

TEST_CASE("cancelling a request mid-tool tells the tool to stop and drops its late result") {
  gate tool_running, tool_returned;
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t", "hold")}), scripted_reply::text("after")});
  runtime rt({.provider = model});
  std::atomic<bool> saw_cancel{false};
  rt.tools().add(make_tool("hold", [&](const json::object&, const tool_context& ctx) {
    tool_running.open();
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (!ctx.is_cancelled() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    saw_cancel = ctx.is_cancelled();
    tool_returned.open();
    return json::value("too late");
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"hold"}});
  request r = a.ask("go");
  REQUIRE(tool_running.wait());
  r.cancel();
  CHECK(error_type_of(must_reply(r)) == "cancelled");
  REQUIRE(tool_returned.wait());
  CHECK(saw_cancel);

  // Its result arrives after the cancel: the executor drops it, and even if
  // it reached the agent the machine would ignore it as stale.
  CHECK(answer_of(must_reply(a.ask("again"))) == "after");
  const auto t = a.snapshot();
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0]->payload.at("error").at("type") == "interrupted");
  CHECK(every_call_answered(*t));
}

TEST_CASE("tool failures become error results the model sees") {
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("saw: " + s.messages.back().content);
    const std::string q = question_in(s);
    if (q == "timeout") return scripted_reply::tools({call("t", "sleepy")});
    if (q == "throw") return scripted_reply::tools({call("t", "broken")});
    if (q == "typed") return scripted_reply::tools({call("t", "picky_fail")});
    return scripted_reply::tools({call("t", "picky", {{"n", "not a number"}})});
  });
  runtime rt({.provider = model});
  rt.tools().add(make_tool("sleepy", [](const json::object&, const tool_context& ctx) {
    // Waits for the executor's timeout to cancel it.
    while (!ctx.is_cancelled()) std::this_thread::yield();
    return json::value("woke");
  }));
  rt.tools().add(make_tool("broken", [](const json::object&, const tool_context&) -> json::value {
    throw std::runtime_error("disk on fire");
  }));
  rt.tools().add(make_tool(
      "picky", [](const json::object&, const tool_context&) { return json::value(1); }, false,
      object_schema({{"n", "integer"}})));
  rt.tools().add(make_tool("picky_fail", [](const json::object&, const tool_context&) -> json::value {
    throw tool_failure("not_found", "no such order");
  }));
  agent a = rt.spawn_agent(
      {.id = "a", .model = "m", .tools = {"sleepy", "broken", "picky", "picky_fail"}, .tool_timeout = 50ms});

  SECTION("a tool that runs past its timeout") {
    CHECK_THAT(answer_of(must_reply(a.ask("timeout"))), Catch::Contains("\"type\":\"timeout\""));
  }
  SECTION("a tool that throws") {
    const std::string answer = answer_of(must_reply(a.ask("throw")));
    CHECK_THAT(answer, Catch::Contains("tool_failed") && Catch::Contains("disk on fire"));
  }
  SECTION("a tool that reports a typed failure") {
    CHECK_THAT(answer_of(must_reply(a.ask("typed"))), Catch::Contains("not_found"));
  }
  SECTION("arguments that do not match the schema are refused before the call") {
    const std::string answer = answer_of(must_reply(a.ask("invalid")));
    CHECK_THAT(answer, Catch::Contains("invalid_arguments") && Catch::Contains("/n"));
  }
}

TEST_CASE("a retryable tool failure is retried with backoff") {
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text(s.messages.back().content);
    return scripted_reply::tools({call("t", "flaky")});
  });
  runtime rt({.provider = model, .telemetry = sink});
  std::atomic<int> attempts{0};
  tool flaky = make_tool("flaky", [&](const json::object&, const tool_context& ctx) {
    ++attempts;
    if (ctx.attempt < 3) throw tool_failure("unavailable", "try later", true);
    return json::value("third time lucky");
  });
  flaky.retry = retry_policy{3, 1ms, 2.0, 10ms};
  rt.tools().add(flaky);
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"flaky"}});

  CHECK(answer_of(must_reply(a.ask("go"))) == "third time lucky");
  CHECK(attempts == 3);
  CHECK(sink->count(telemetry_kind::tool_retry) == 2);
}

TEST_CASE("a model error ends the request with a typed error and the agent stays usable") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{
      scripted_reply::failure({"rate_limited", "slow down", 429, 3, 1.0}), scripted_reply::text("fine now")});
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  const reply r = must_reply(a.ask("hi"));
  CHECK(error_type_of(r) == "rate_limited");
  CHECK(std::get<error_info>(r.outcome).attempts == 3);
  CHECK(answer_of(must_reply(a.ask("hi again"))) == "fine now");
}

TEST_CASE("stream events report deltas, tools and the end of the request") {
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t", "echo", {{"x", 1}})}), scripted_reply::text("bye")});
  runtime rt({.provider = model});
  rt.tools().add(make_tool("echo", [](const json::object& a, const tool_context&) { return json::value(a); }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"echo"}});
  std::mutex m;
  std::vector<std::size_t> kinds;
  ask_options o;
  o.on_event = [&](const stream_event& e) {
    std::lock_guard lock(m);
    kinds.push_back(e.index());
  };
  must_reply(a.ask("hi", o));
  std::lock_guard lock(m);
  // tool started, tool finished, delta "bye", finished
  CHECK(kinds == std::vector<std::size_t>{1, 2, 0, 3});
}

TEST_CASE("a cancel sent right after its ask is never overtaken by it") {
  auto model = std::make_shared<scripted_provider>([](const llm_stream&) { return stalls(); });
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  for (int i = 0; i < 20; ++i) {
    request r = a.ask("question " + std::to_string(i));
    r.cancel();
    CHECK(error_type_of(must_reply(r)) == "cancelled");
  }
}
