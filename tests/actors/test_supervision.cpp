// Crashes, restarts, escalation, executors dying, agents as tools, stops and
// drains, shutdown.

#include "support/runtime_harness.hpp"

#include "actors/detail/runtime_impl.hpp"
#include "serve/support/gate_provider.hpp"
#include "support/agent_stats.hpp"
#include "support/catch_decoded.hpp"
#include "support/memory_backed_store.hpp"

#include <atomic>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

void kill(runtime& rt, const agent_actor& a) {
  caf::anon_send_exit(a, caf::exit_reason::kill);
  (void)rt;
}

agent_actor current_actor(runtime& rt, const std::string& id) {
  auto a = rt.internals().ctx->agents.find(id);
  REQUIRE(a);
  return *a;
}

}  // namespace

TEST_CASE("a crashed agent is restarted with its thread, and its request fails with a typed error") {
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::text("first answer"), stalls(), scripted_reply::text("I remember")});
  runtime rt({.provider = model, .telemetry = sink});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .restart = restart_policy::permanent});
  CHECK(answer_of(must_reply(a.ask("remember 42"))) == "first answer");

  gate streaming;
  const ask_options o = open_on_first_delta(streaming);
  request in_flight = a.ask("a question the agent will not live to answer", o);
  REQUIRE(streaming.wait());
  const agent_actor before = current_actor(rt, "a");
  kill(rt, before);

  const reply r = must_reply(in_flight);
  CHECK(error_type_of(r) == "agent_crashed");
  REQUIRE(sink->wait_for(telemetry_kind::agent_restarted, 1, patience));
  CHECK(current_actor(rt, "a") != before);

  SECTION("the thread was rebuilt from the store with every committed entry") {
    const auto t = a.snapshot();
    REQUIRE(t);
    REQUIRE(t->size() == 3);  // two user messages and the first answer
    CHECK(t->at_seq(0)->payload.at("content") == "remember 42");
    CHECK(t->at_seq(1)->payload.at("content") == "first answer");
  }
  SECTION("the conversation continues") {
    CHECK(answer_of(must_reply(a.ask("what was the number?"))) == "I remember");
    CHECK(a.snapshot()->size() == 5);
  }
}

TEST_CASE("a tool call in flight when the agent died gets an interrupted result when its thread is loaded again") {
  auto sink = std::make_shared<recording_sink>();
  gate tool_running, release;
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t", "hold")}), scripted_reply::text("recovered")});
  runtime rt({.provider = model, .telemetry = sink});
  rt.tools().add(make_tool("hold", [&](const json::object&, const tool_context&) {
    tool_running.open();
    release.wait();
    return json::value(1);
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"hold"}, .restart = restart_policy::permanent});
  request r = a.ask("go");
  REQUIRE(tool_running.wait());
  kill(rt, current_actor(rt, "a"));
  CHECK(error_type_of(must_reply(r)) == "agent_crashed");
  REQUIRE(sink->wait_for(telemetry_kind::agent_restarted, 1, patience));
  release.open();

  CHECK(answer_of(must_reply(a.ask("and now?"))) == "recovered");
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  CHECK(t->of_kind(entry_kind::tool_result).at(0)->payload.at("error").at("type") == "interrupted");
}

TEST_CASE("past its restart intensity an agent is given up on and the failure reported") {
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{});
  runtime rt({.provider = model, .telemetry = sink, .max_restarts = 2, .restart_window = std::chrono::minutes(1)});
  agent a = rt.spawn_agent({.id = "fragile", .model = "m", .restart = restart_policy::permanent});

  for (std::size_t restarts = 1; restarts <= 2; ++restarts) {
    kill(rt, current_actor(rt, "fragile"));
    REQUIRE(sink->wait_for(telemetry_kind::agent_restarted, restarts, patience));
  }
  kill(rt, current_actor(rt, "fragile"));
  REQUIRE(sink->wait_for(telemetry_kind::agent_escalated, 1, patience));

  CHECK(sink->count(telemetry_kind::agent_restarted) == 2);
  CHECK(!a.running());
  const reply r = must_reply(a.ask("anyone there?"));
  CHECK(error_type_of(r) == "agent_failed");
  CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("3 times"));
}

TEST_CASE("a stopped agent is not restarted and its requests end with shutdown") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{stalls()});
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .restart = restart_policy::permanent});
  gate streaming;
  const ask_options o = open_on_first_delta(streaming);
  request r = a.ask("long", o);
  REQUIRE(streaming.wait());
  CHECK(a.stop());
  CHECK(error_type_of(must_reply(r)) == "shutdown");
  CHECK(!a.running());
  CHECK(error_type_of(must_reply(a.ask("still there?"))) == "not_found");
}

namespace {

// What agent::drain called back with, once it did.
struct drain_report {
  gate called;
  std::atomic<bool> stopped{false};
  std::function<void(bool)> callback() {
    return [this](bool b) {
      stopped = b;
      called.open();
    };
  }
};

}  // namespace

TEST_CASE("a drained agent finishes the requests it runs and holds queued, refuses new ones meanwhile, then stops") {
  auto model = std::make_shared<gate_provider>();
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m", .restart = restart_policy::permanent});
  request running = a.ask("hold on", {.thread_id = "t"});
  REQUIRE(model->wait_held("hold on"));
  request queued = a.ask("and then", {.thread_id = "t"});
  REQUIRE(stats_become(rt, "a", [](const agent_stats& s) { return s.running_requests == 2; }));
  drain_report report;
  a.drain(std::chrono::hours(1), report.callback());  // it stops as the requests end, not at its patience
  REQUIRE(stats_become(rt, "a", [](const agent_stats& s) { return s.draining; }));

  // Refused before the model or the store sees it: its caller may ask
  // wherever the agent runs next.
  const reply refused = must_reply(a.ask("anyone new?", {.thread_id = "u"}));
  CHECK(error_type_of(refused) == error_type::agent_stopped);
  decision d;
  d.request_id = "r";
  d.tool_call_id = "c";
  const reply decision_refused = must_reply(a.decide(d, {.thread_id = "t"}));
  CHECK(error_type_of(decision_refused) == error_type::agent_stopped);
  CHECK(a.running());
  CHECK(!report.called.is_open());

  model->release("hold on");
  CHECK(answer_of(must_reply(running)) == "done: hold on");
  CHECK(answer_of(must_reply(queued)) == "echo: and then");
  REQUIRE(report.called.wait());
  CHECK(report.stopped);
  CHECK(!a.running());         // stopped for good, though its policy is permanent
  CHECK(model->calls() == 2);  // the refused ask never reached the model
}

TEST_CASE("a drain past its patience stops the agent as stop does: the request it runs ends with shutdown") {
  auto model = std::make_shared<gate_provider>();
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  request running = a.ask("hold forever");
  REQUIRE(model->wait_held("hold forever"));
  drain_report report;
  a.drain(std::chrono::milliseconds(50), report.callback());
  CHECK(error_type_of(must_reply(running)) == error_type::shutdown);
  REQUIRE(report.called.wait());
  CHECK(report.stopped);
  CHECK(!a.running());
}

TEST_CASE("an idle agent drained stops at once, and draining an agent that is not running reports false") {
  runtime rt({.provider = std::make_shared<gate_provider>()});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  drain_report idle, again;
  a.drain(std::chrono::hours(1), idle.callback());
  REQUIRE(idle.called.wait());
  CHECK(idle.stopped);
  CHECK(!a.running());
  a.drain(patience, again.callback());
  REQUIRE(again.called.wait());
  CHECK(!again.stopped);
}

TEST_CASE("a message outside an agent's interface is refused with an error, and the agent goes on") {
  runtime rt(
      {.provider = std::make_shared<scripted_provider>(std::vector<scripted_reply>{scripted_reply::text("hi")})});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  const caf::actor untyped = caf::actor_cast<caf::actor>(current_actor(rt, "a"));
  caf::scoped_actor self{*rt.internals().system};
  auto refusal = [&](auto... xs) {
    std::optional<caf::error> err;
    self->request(untyped, patience, xs...)
        // Any answer but an error ends up as unexpected_response.
        .receive([](caf::unit_t) {}, [&](caf::error& e) { err = std::move(e); });
    return err;
  };

  SECTION("a known atom with other arguments") {
    const auto err = refusal(ask_atom::value, std::string("not a query"));
    REQUIRE(err);
    CHECK(*err == caf::sec::unexpected_message);
  }
  SECTION("a message of no kind the agent knows") {
    const auto err = refusal(std::string("hello"), 42);
    REQUIRE(err);
    CHECK(*err == caf::sec::unexpected_message);
  }
  CHECK(answer_of(must_reply(a.ask("still there?"))) == "hi");
}

TEST_CASE("a crashed executor becomes an error result, never a hung request") {
  auto sink = std::make_shared<recording_sink>();

  SECTION("the model executor") {
    auto model =
        std::make_shared<scripted_provider>(std::vector<scripted_reply>{stalls(), scripted_reply::text("works again")});
    runtime rt({.provider = model, .telemetry = sink, .executors = 1});
    agent a = rt.spawn_agent({.id = "a", .model = "m"});
    gate streaming;
    const ask_options o = open_on_first_delta(streaming);
    request r = a.ask("hi", o);
    REQUIRE(streaming.wait());
    caf::anon_send_exit(rt.internals().ctx->llm_executors.all().at(0), caf::exit_reason::kill);
    CHECK(error_type_of(must_reply(r)) == "executor_crashed");
    CHECK(answer_of(must_reply(a.ask("again"))) == "works again");
  }
  SECTION("the tool executor") {
    gate tool_running, release;
    auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
      if (s.messages.back().role == "tool") return scripted_reply::text(s.messages.back().content);
      return scripted_reply::tools({call("t", "hold")});
    });
    runtime rt({.provider = model, .telemetry = sink, .executors = 1});
    rt.tools().add(make_tool("hold", [&](const json::object&, const tool_context&) {
      tool_running.open();
      release.wait();
      return json::value("late");
    }));
    agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"hold"}});
    request r = a.ask("go");
    REQUIRE(tool_running.wait());
    caf::anon_send_exit(rt.internals().ctx->tool_executors.all().at(0), caf::exit_reason::kill);
    // The model sees the crash as the tool's result and answers with it.
    CHECK_THAT(answer_of(must_reply(r)), Catch::Contains("executor_crashed"));
    release.open();
  }
}

TEST_CASE("an agent can be another agent's tool") {
  auto expert_model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    return scripted_reply::text("the expert says: " + s.messages.back().content + " is 4");
  });
  auto lead_model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("Answer: " + s.messages.back().content);
    return scripted_reply::tools({call("t", "ask_expert", {{"question", "2+2"}})});
  });
  runtime rt;
  rt.spawn_agent({.id = "expert", .model = "m", .provider = expert_model});
  rt.add_agent_tool("ask_expert", "expert", "Asks the arithmetic expert.");
  agent lead = rt.spawn_agent({.id = "lead", .model = "m", .tools = {"ask_expert"}, .provider = lead_model});

  CHECK(answer_of(must_reply(lead.ask("what is 2+2?"))) == "Answer: the expert says: 2+2 is 4");
  const auto expert_thread = rt.find_agent("expert")->snapshot("lead->expert");
  REQUIRE(expert_thread);
  CHECK(expert_thread->size() == 2);
}

TEST_CASE("shutting down ends requests in flight with a shutdown error") {
  auto model = std::make_shared<scripted_provider>([](const llm_stream&) { return stalls(); });
  runtime rt({.provider = model});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  request running = a.ask("one");
  request queued = a.ask("two");
  ask_options other;
  other.thread_id = "other";
  request elsewhere = a.ask("three", other);
  rt.shutdown();
  CHECK(error_type_of(must_reply(running)) == "shutdown");
  CHECK(error_type_of(must_reply(queued)) == "shutdown");
  CHECK(error_type_of(must_reply(elsewhere)) == "shutdown");
  CHECK(error_type_of(must_reply(a.ask("after"))) == "shutdown");
}

TEST_CASE("shutting down stops agents that would be restarted, without restarting them") {
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>([](const llm_stream&) { return stalls(); });
  runtime rt({.provider = model, .telemetry = sink});
  std::vector<agent_spec> specs;
  for (int i = 0; i < 50; ++i)
    specs.push_back({.id = "p" + std::to_string(i), .model = "m", .restart = restart_policy::permanent});
  std::vector<agent> agents = rt.spawn_agents(std::move(specs));
  request running = agents[7].ask("one");
  rt.shutdown();
  CHECK(error_type_of(must_reply(running)) == "shutdown");
  CHECK(sink->count(telemetry_kind::agent_restarted) == 0);
  CHECK(rt.agent_ids().empty());
  for (const agent& a : agents) CHECK(!a.running());
}

TEST_CASE("agents spawned in one batch") {
  auto model = std::make_shared<scripted_provider>(
      [](const llm_stream& s) { return scripted_reply::text("I am " + s.messages.front().content); });
  runtime rt({.provider = model});

  SECTION("each answer as itself, in the order given") {
    std::vector<agent_spec> specs;
    for (int i = 0; i < 3; ++i)
      specs.push_back({.id = "b" + std::to_string(i), .model = "m", .system_prompt = "agent " + std::to_string(i)});
    const std::vector<agent> agents = rt.spawn_agents(std::move(specs));
    REQUIRE(agents.size() == 3);
    for (int i = 0; i < 3; ++i) {
      CHECK(agents[i].id() == "b" + std::to_string(i));
      CHECK(answer_of(must_reply(agents[i].ask("who are you?"))) == "I am agent " + std::to_string(i));
    }
  }
  SECTION("a batch naming an agent already running starts none of its agents") {
    rt.spawn_agent({.id = "taken", .model = "m"});
    std::vector<agent_spec> specs{{.id = "fresh", .model = "m"}, {.id = "taken", .model = "m"}};
    CHECK_THROWS_AS(rt.spawn_agents(std::move(specs)), std::invalid_argument);
    CHECK(!rt.find_agent("fresh"));
  }
  SECTION("a batch naming one agent twice starts none of its agents") {
    std::vector<agent_spec> specs{
        {.id = "twin", .model = "m"}, {.id = "other", .model = "m"}, {.id = "twin", .model = "m"}};
    CHECK_THROWS_AS(rt.spawn_agents(std::move(specs)), std::invalid_argument);
    CHECK(!rt.find_agent("twin"));
    CHECK(!rt.find_agent("other"));
  }
  SECTION("a batch with an unknown tool starts none of its agents") {
    std::vector<agent_spec> specs{{.id = "fine", .model = "m"}, {.id = "odd", .model = "m", .tools = {"nope"}}};
    CHECK_THROWS_AS(rt.spawn_agents(std::move(specs)), std::invalid_argument);
    CHECK(!rt.find_agent("fine"));
  }
}

TEST_CASE("agents spawned together with their own prompts keep them across a restart") {
  // Their configs are shared apart from the prompt, which each agent holds.
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>(
      [](const llm_stream& s) { return scripted_reply::text("I am " + s.messages.front().content); });
  runtime rt({.provider = model, .telemetry = sink});
  std::vector<agent_spec> specs;
  for (int i = 0; i < 2; ++i)
    specs.push_back({.id = "p" + std::to_string(i), .model = "m", .system_prompt = "persona " + std::to_string(i)});
  specs.push_back({.id = "plain", .model = "m", .system_prompt = ""});
  const std::vector<agent> agents = rt.spawn_agents(std::move(specs));
  kill(rt, current_actor(rt, "p1"));
  REQUIRE(sink->wait_for(telemetry_kind::agent_restarted, 1, patience));
  CHECK(answer_of(must_reply(agents[0].ask("who?"))) == "I am persona 0");
  CHECK(answer_of(must_reply(agents[1].ask("who?"))) == "I am persona 1");
  CHECK(answer_of(must_reply(agents[2].ask("who?"))) == "I am who?");  // no system message at all
}

TEST_CASE("telemetry reports a request with its correlation ids") {
  auto sink = std::make_shared<recording_sink>();
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t", "noop")}), scripted_reply::text("ok")});
  runtime rt({.provider = model, .telemetry = sink});
  rt.tools().add(make_tool(
      "noop", [](const json::object&, const tool_context&) { return json::value(); }, false));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"noop"}});
  const request r = a.ask("go");
  must_reply(r);
  REQUIRE(sink->wait_for(telemetry_kind::request_completed, 1, patience));

  CHECK(sink->count(telemetry_kind::request_started) == 1);
  CHECK(sink->count(telemetry_kind::llm_started) == 2);
  CHECK(sink->count(telemetry_kind::llm_completed) == 2);
  CHECK(sink->count(telemetry_kind::tool_started) == 1);
  CHECK(sink->count(telemetry_kind::tool_completed) == 1);
  for (const auto& e : sink->events()) {
    if (e.kind == telemetry_kind::tool_completed) {
      CHECK(e.agent_id == "a");
      CHECK(e.request_id == r.id());
      CHECK(e.tool_call_id == "t");
      CHECK(!e.call_id.empty());
      CHECK(e.iteration == 1);
    }
  }
}

namespace {

// A memory store that can be told to fail, like a full disk or a lost connection.
class failing_store final : public testing::memory_backed_store {
 public:
  std::atomic<bool> broken{false};
  // The next commit is written but reported lost, as when the connection
  // drops between a commit and its answer.
  std::atomic<bool> lose_next_answer{false};
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    if (broken) return store_error{"io", "no space left on device"};
    auto written = inner.append(t, expected_rev);
    if (written && lose_next_answer.exchange(false))
      return store_error{"io", "server closed the connection unexpectedly"};
    return written;
  }
};

}  // namespace

TEST_CASE("a store that cannot be written fails the request and keeps memory and store consistent") {
  auto store = std::make_shared<failing_store>();
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done");
    return scripted_reply::tools({call("t", "noop")});
  });
  runtime rt({.provider = model, .store = store});
  rt.tools().add(make_tool(
      "noop", [](const json::object&, const tool_context&) { return json::value(1); }, false));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"noop"}});
  CHECK(answer_of(must_reply(a.ask("first"))) == "done");

  store->broken = true;
  const reply r = must_reply(a.ask("second"));
  CHECK(error_type_of(r) == "store_failed");
  CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("no space left"));
  const auto in_memory = a.snapshot();
  const auto in_store = store->load("a:default");
  REQUIRE(in_memory);
  REQUIRE(in_store);
  CHECK(in_memory->rev() == in_store->rev());  // nothing half-written
  CHECK(in_memory->size() == 4);               // the first turn only

  store->broken = false;
  CHECK(answer_of(must_reply(a.ask("third"))) == "done");
  CHECK(store->load("a:default")->size() == 8);
  CHECK(every_call_answered(*a.snapshot()));
}

TEST_CASE("after a commit whose answer was lost, the agent takes the thread the store holds and goes on") {
  auto store = std::make_shared<failing_store>();
  auto model = std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("done"); });
  runtime rt({.provider = model, .store = store});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  CHECK(answer_of(must_reply(a.ask("first"))) == "done");

  store->lose_next_answer = true;  // the question of "second" is stored, but the agent hears io
  CHECK(error_type_of(must_reply(a.ask("second"))) == "store_failed");
  CHECK(a.snapshot()->rev() == store->load("a:default")->rev());  // memory follows the store

  CHECK(answer_of(must_reply(a.ask("third"))) == "done");  // no conflict left behind
  const auto t = store->load("a:default");
  REQUIRE(t);
  CHECK(t->rev() == a.snapshot()->rev());
  CHECK(t->last()->payload.at("content") == "done");
}
