// Approvals through the embedding API: a request pauses with the calls that
// wait for a person, a decision continues it, and a pause outlives its
// runtime when the thread is stored.

#include "support/runtime_harness.hpp"

#include "support/agent_stats.hpp"
#include "support/store_backends.hpp"

#include "runtime/store/memory_store.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"
#include "runtime/tools/builtin_tools.hpp"
#include "strategy/react_thread.hpp"
#include "support/sqlite_file.hpp"

#include <atomic>
#include <future>
#include <iostream>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// Asked anything, the model searches and sends in one turn; shown the
// results (in the order they came), it answers with what send said.
std::shared_ptr<scripted_provider> search_and_send() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    for (const llm_message& m : s.messages)
      if (m.role == "tool" && m.tool_call_id == "s2") return scripted_reply::text("done: " + m.content);
    return scripted_reply::tools({call("s1", "search", {{"q", "x"}}), call("s2", "send", {{"to", "bob"}})});
  });
}

struct counted_tools {
  std::atomic<int> searches{0}, sends{0};

  void add_to(runtime& rt) {
    rt.tools().add(make_tool("search", [this](const json::object&, const tool_context&) {
      ++searches;
      return json::value("found");
    }));
    rt.tools().add(counted_send(sends));
  }
};

// A runtime with the counted tools and a sink recording its telemetry.
struct watched {
  counted_tools tools;
  std::shared_ptr<recording_sink> sink = std::make_shared<recording_sink>();
  runtime rt{runtime_options{.provider = search_and_send(), .telemetry = sink}};
  watched() { tools.add_to(rt); }
};

agent_spec supervised(std::string id = "a") {
  agent_spec spec{.id = std::move(id), .model = "m", .tools = {"search", "send"}};
  spec.approvals["send"] = approval_rule{approval_mode::always, {}, "sends an email", 3'600'000, verdict::reject};
  return spec;
}

decision decide(const std::string& request_id, verdict v, std::string key = {}) {
  decision d;
  d.request_id = request_id;
  d.tool_call_id = "s2";
  d.answer = v;
  d.decided_by = "ada";
  d.idempotency_key = std::move(key);
  return d;
}

// The thread ends with the model's answer to send's expiry.
bool answered_after_expiry(const agent& a) {
  const auto t = a.snapshot();
  return t && t->last_assistant_text() ==
                  std::optional<std::string>(
                      R"(done: {"error":{"type":"expired","message":"no decision came before the deadline"}})");
}

// The thread's one decision is the deadline's.
bool decided_by_expiry_alone(const agent& a) {
  const auto t = a.snapshot();
  if (!t) return false;
  const auto decisions = t->of_kind(entry_kind::decision);
  return decisions.size() == 1 && decisions[0]->payload.at("expired") == true &&
         decisions[0]->payload.at("decided_by") == "expiry";
}

// "mail bob" asks for send alone (the thread is idle once it pauses);
// shown send's result, the model answers with it; anything else is answered
// at once.
std::shared_ptr<scripted_provider> send_when_asked() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (const llm_message& last = s.messages.back(); last.role == "tool")
      return scripted_reply::text("done: " + last.content);
    if (question_in(s) == "mail bob") return scripted_reply::tools({call("s2", "send", {{"to", "bob"}})});
    return scripted_reply::text("hi");
  });
}

// Asks on another thread until the agent holds one thread: with
// max_loaded_threads = 1, the paused one has left memory.
void push_out_of_memory(runtime& rt, const agent& a) {
  REQUIRE(answer_of(must_reply(a.ask("hello", {.thread_id = "other"}))) == "hi");
  REQUIRE(stats_become(rt, a.id(), [](const agent_stats& s) { return s.loaded_threads == 1; }));
}

// The reply the handle holds once it is no longer the paused one.
std::optional<reply> ended(const request& r) {
  std::optional<reply> out;
  if (!eventually([&] {
        out = r.await(std::chrono::milliseconds(0));
        return out && !out->paused();
      }))
    return std::nullopt;
  return out;
}

// The stream events a subscriber heard, on the runtime's threads.
class heard_events {
 public:
  ask_options options() {
    ask_options o;
    o.on_event = [this](const stream_event& e) {
      std::lock_guard lock(m_);
      seen_.push_back(e);
    };
    return o;
  }
  std::vector<stream_event> all() {
    std::lock_guard lock(m_);
    return seen_;
  }

 private:
  std::mutex m_;
  std::vector<stream_event> seen_;
};

}  // namespace

TEST_CASE("a cancel ends a paused request: its waiting calls are answered cancelled") {
  counted_tools tools;
  runtime rt({.provider = send_when_asked()});
  tools.add_to(rt);
  agent_spec spec = supervised();
  spec.max_loaded_threads = 1;
  agent a = rt.spawn_agent(spec);
  const request r = a.ask("mail bob", {.request_id = "r1"});
  REQUIRE(must_reply(r).paused());

  SECTION("while its thread is in memory") {}
  SECTION("after its thread left memory") { push_out_of_memory(rt, a); }

  r.cancel("nobody will decide");
  const auto end = ended(r);
  REQUIRE(end);
  CHECK(error_type_of(*end) == error_type::cancelled);
  CHECK(r.pending().empty());
  CHECK(tools.sends == 0);
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0]->payload.get_if<tool_result_payload>()->outcome_json().at("type") == "cancelled");
  CHECK(t->of_kind(entry_kind::error).size() == 1);
  // The thread is free again, and the call can no longer be decided.
  CHECK(error_type_of(must_reply(a.decide(decide("r1", verdict::approve)))) == error_type::already_decided);
  CHECK(answer_of(must_reply(a.ask("still there?"))) == "hi");
}

TEST_CASE("a paused thread that left memory takes its default when its deadline comes") {
  counted_tools tools;
  runtime rt({.provider = send_when_asked()});
  tools.add_to(rt);
  agent_spec spec = supervised();
  spec.max_loaded_threads = 1;
  // Long enough for the other thread to push this one out of memory first.
  spec.approvals["send"].timeout_ms = 1'500;
  agent a = rt.spawn_agent(spec);
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  push_out_of_memory(rt, a);
  CHECK(eventually([&] { return answered_after_expiry(a); }));
  CHECK(tools.sends == 0);
}

TEST_CASE("a request that needs approval pauses, and a decision continues it") {
  counted_tools tools;
  runtime rt({.provider = search_and_send()});
  tools.add_to(rt);
  agent a = rt.spawn_agent(supervised());

  const request r = a.ask("mail bob", {.request_id = "r1"});
  const reply paused = must_reply(r);
  REQUIRE(paused.paused());
  CHECK(error_type_of(paused) == error_type::awaiting_input);
  REQUIRE(paused.pending.size() == 1);
  CHECK(paused.pending[0].tool_call_id == "s2");
  CHECK(paused.pending[0].tool == "send");
  CHECK(paused.pending[0].reason == "sends an email");
  CHECK(r.pending() == paused.pending);
  CHECK(tools.sends == 0);

  SECTION("approve: the call runs once and the request ends with the model's answer") {
    const reply done = must_reply(a.decide(decide("r1", verdict::approve)));
    CHECK(answer_of(done) == "done: sent to bob");
    CHECK(tools.sends == 1);
    CHECK(tools.searches == 1);
    SECTION("a decision for it again is refused as already decided") {
      CHECK(error_type_of(must_reply(a.decide(decide("r1", verdict::reject)))) == error_type::already_decided);
    }
  }
  SECTION(
      "the same decision sent twice is committed once, its call runs once, and the repeat is answered as the first") {
    CHECK(answer_of(must_reply(a.decide(decide("r1", verdict::approve, "k1")))) == "done: sent to bob");
    // The request it continued has ended: the repeat hears that end.
    CHECK(answer_of(must_reply(a.decide(decide("r1", verdict::approve, "k1")))) == "done: sent to bob");
    CHECK(tools.sends == 1);
    const auto t = a.snapshot();
    REQUIRE(t);
    CHECK(t->of_kind(entry_kind::decision).size() == 1);
  }
  SECTION("reject: the call never runs, and the model reads the message") {
    decision d = decide("r1", verdict::reject);
    d.message = "not to bob";
    CHECK(answer_of(must_reply(a.decide(d))) == R"(done: {"error":{"type":"rejected","message":"not to bob"}})");
    CHECK(tools.sends == 0);
  }
  SECTION("edit: the arguments are validated against the tool's schema before it runs") {
    decision d = decide("r1", verdict::edit);
    d.arguments = {{"to", 5}};
    const std::string answer = answer_of(must_reply(a.decide(d)));
    CHECK_THAT(answer, Catch::Contains("invalid_arguments"));
    CHECK(tools.sends == 0);
  }
  SECTION("a decision for a call that does not wait is a typed error, and the pause stays") {
    decision d = decide("r1", verdict::approve);
    d.tool_call_id = "nope";
    CHECK(error_type_of(must_reply(a.decide(d))) == error_type::not_found);
    CHECK(answer_of(must_reply(a.decide(decide("r1", verdict::approve)))) == "done: sent to bob");
  }
  SECTION("a new question while paused is refused as busy") {
    CHECK(error_type_of(must_reply(a.ask("anything else?"))) == error_type::busy);
  }
}

TEST_CASE("a decision repeated while the request it continued runs is answered with that request's end") {
  // send blocks until the test lets it go: the request runs meanwhile.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> sends{0};
  runtime rt({.provider = send_when_asked()});
  rt.tools().add(make_tool("send", [&](const json::object& a, const tool_context&) {
    ++sends;
    gate.wait();
    return json::value("sent to " + std::string(a.at("to").as_string()));
  }));
  agent_spec spec{.id = "a", .model = "m", .tools = {"send"}};
  spec.approvals["send"] = approval_rule{approval_mode::always};
  agent a = rt.spawn_agent(spec);
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());

  const request first = a.decide(decide("r1", verdict::approve, "k1"));
  REQUIRE(eventually([&] { return sends == 1; }));
  const request again = a.decide(decide("r1", verdict::approve, "k1"));
  go.set_value();
  CHECK(answer_of(must_reply(first)) == "done: sent to bob");
  CHECK(answer_of(must_reply(again)) == "done: sent to bob");
  CHECK(sends == 1);
}

TEST_CASE("a subscriber sees the pause as an event: the calls that wait, placed after the model's batch") {
  counted_tools tools;
  runtime rt({.provider = search_and_send()});
  tools.add_to(rt);
  agent a = rt.spawn_agent(supervised());
  std::mutex m;
  std::vector<stream_event> seen;
  ask_options o{.request_id = "r1"};
  o.on_event = [&](const stream_event& e) {
    std::lock_guard lock(m);
    seen.push_back(e);
  };
  REQUIRE(must_reply(a.ask("mail bob", std::move(o))).paused());
  std::lock_guard lock(m);
  REQUIRE(seen.size() >= 2);
  CHECK(std::holds_alternative<request_finished_event>(seen.back()));
  const auto* paused = std::get_if<approval_requested_event>(&seen[seen.size() - 2]);
  REQUIRE(paused);
  CHECK(paused->request_id == "r1");
  REQUIRE(paused->pending.size() == 1);
  CHECK(paused->pending[0].tool_call_id == "s2");
  CHECK(paused->pending[0].tool == "send");
  CHECK(paused->pending[0].arguments == json::object{{"to", "bob"}});
  // The model's batch ends with send's approval request.
  const auto t = a.snapshot();
  REQUIRE(t);
  const auto asked = t->of_kind(entry_kind::approval_request);
  REQUIRE(asked.size() == 1);
  CHECK(paused->thread_seq == asked[0]->seq);
}

TEST_CASE("a decide's subscriber follows the request it continues: the approved call and the answer to its end") {
  counted_tools tools;
  runtime rt({.provider = send_when_asked()});  // send alone: no free call ends during the continuation
  tools.add_to(rt);
  agent a = rt.spawn_agent(supervised());
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  heard_events heard;
  CHECK(answer_of(must_reply(a.decide(decide("r1", verdict::approve), heard.options()))) == "done: sent to bob");
  const std::vector<stream_event> seen = heard.all();
  REQUIRE(seen.size() >= 4);
  const auto* started = std::get_if<tool_started_event>(&seen[0]);
  REQUIRE(started);
  CHECK(started->request_id == "r1");
  CHECK(started->tool_call_id == "s2");
  CHECK(started->tool_name == "send");
  CHECK(started->arguments == json::object{{"to", "bob"}});
  const auto* finished = std::get_if<tool_finished_event>(&seen[1]);
  REQUIRE(finished);
  CHECK(finished->tool_call_id == "s2");
  const auto* result = std::get_if<json::value>(&finished->outcome);
  REQUIRE(result);
  CHECK(*result == json::value("sent to bob"));
  std::string streamed;
  for (std::size_t i = 2; i + 1 < seen.size(); ++i) {
    const auto* d = std::get_if<delta_event>(&seen[i]);
    REQUIRE(d);
    CHECK(d->request_id == "r1");
    streamed += d->text;
  }
  CHECK(streamed == "done: sent to bob");
  const auto* last = std::get_if<request_finished_event>(&seen.back());
  REQUIRE(last);
  CHECK(answer_of(last->result) == "done: sent to bob");
}

TEST_CASE("a decide's subscriber hears a free call still running start before it hears it end") {
  // search (free) blocks until the test lets it go: it outlasts the pause.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> sends{0};
  runtime rt({.provider = search_and_send()});
  rt.tools().add(make_tool("search", [&](const json::object&, const tool_context&) {
    gate.wait();
    return json::value("found");
  }));
  rt.tools().add(make_tool("send", [&](const json::object&, const tool_context&) {
    ++sends;
    return json::value("sent to bob");
  }));
  agent a = rt.spawn_agent(supervised());
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  heard_events heard;
  const request r = a.decide(decide("r1", verdict::approve), heard.options());
  // send runs once the decide follows the request; search still runs.
  REQUIRE(eventually([&] { return sends == 1; }));
  go.set_value();
  CHECK(answer_of(must_reply(r)) == "done: sent to bob");
  std::optional<std::size_t> started, finished;
  const auto events = heard.all();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (const auto* s = std::get_if<tool_started_event>(&events[i]); s && s->tool_call_id == "s1") started = i;
    if (const auto* f = std::get_if<tool_finished_event>(&events[i]); f && f->tool_call_id == "s1") finished = i;
  }
  REQUIRE(finished);
  REQUIRE(started);
  CHECK(*started < *finished);
}

TEST_CASE("a decide's subscriber sees the request it continues pause again") {
  counted_tools tools;
  // Shown send's result for bob, the model sends to carol too.
  runtime rt({.provider = std::make_shared<scripted_provider>([](const llm_stream& s) {
                if (const llm_message& last = s.messages.back(); last.role == "tool" && last.tool_call_id == "s2")
                  return scripted_reply::tools({call("s3", "send", {{"to", "carol"}})});
                return scripted_reply::tools({call("s2", "send", {{"to", "bob"}})});
              })});
  tools.add_to(rt);
  agent a = rt.spawn_agent(supervised());
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  heard_events heard;
  REQUIRE(must_reply(a.decide(decide("r1", verdict::approve), heard.options())).paused());
  const std::vector<stream_event> seen = heard.all();
  REQUIRE(seen.size() == 4);
  CHECK(std::holds_alternative<tool_started_event>(seen[0]));
  CHECK(std::holds_alternative<tool_finished_event>(seen[1]));
  const auto* again = std::get_if<approval_requested_event>(&seen[2]);
  REQUIRE(again);
  REQUIRE(again->pending.size() == 1);
  CHECK(again->pending[0].tool_call_id == "s3");
  const auto* last = std::get_if<request_finished_event>(&seen[3]);
  REQUIRE(last);
  CHECK(last->result.paused());
}

TEST_CASE("the wait from a pause to its decision is reported, timed by the thread's entries") {
  watched w;
  runtime& rt = w.rt;
  const auto& sink = w.sink;
  agent a = rt.spawn_agent(supervised());
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  CHECK(sink->count(telemetry_kind::approval_decided) == 0);
  must_reply(a.decide(decide("r1", verdict::approve)));
  REQUIRE(sink->wait_for(telemetry_kind::approval_decided, 1, patience));
  telemetry_event waited;
  for (const telemetry_event& e : sink->events())
    if (e.kind == telemetry_kind::approval_decided) waited = e;
  CHECK(waited.request_id == "r1");
  CHECK(waited.tool_call_id == "s2");
  CHECK(waited.detail == "send");
  CHECK(waited.verdict == "approve");
  CHECK(waited.decided_by == "ada");
  CHECK_FALSE(waited.expired);
  const auto t = a.snapshot();
  REQUIRE(t);
  const auto asked = t->of_kind(entry_kind::approval_request);
  const auto decided = t->of_kind(entry_kind::decision);
  REQUIRE(asked.size() == 1);
  REQUIRE(decided.size() == 1);
  CHECK(waited.duration_us == (decided[0]->at - asked[0]->at) * 1000);
  CHECK(waited.end_unix_ns == decided[0]->at * 1'000'000);
  CHECK(sink->count(telemetry_kind::approval_decided) == 1);
}

TEST_CASE("a request continued by a decision is reported started again, so its starts and ends pair up") {
  watched w;
  runtime& rt = w.rt;
  const auto& sink = w.sink;
  agent a = rt.spawn_agent(supervised());
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  REQUIRE(sink->wait_for(telemetry_kind::request_paused, 1, patience));  // the pause ends the ask
  CHECK(sink->count(telemetry_kind::request_started) == 1);
  CHECK(answer_of(must_reply(a.decide(decide("r1", verdict::approve)))) == "done: sent to bob");
  REQUIRE(sink->wait_for(telemetry_kind::request_completed, 1, patience));
  CHECK(sink->count(telemetry_kind::request_started) == 2);
  CHECK(sink->count(telemetry_kind::request_paused) + sink->count(telemetry_kind::request_completed) == 2);
  CHECK(sink->count(telemetry_kind::request_failed) == 0);  // a pause is not a failure
}

TEST_CASE("a request its deadline's default continues is reported started again and ended, as any request") {
  watched w;
  runtime& rt = w.rt;
  const auto& sink = w.sink;
  agent_spec spec = supervised();
  spec.approvals["send"].timeout_ms = 1;
  agent a = rt.spawn_agent(spec);
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  // Nobody follows the request the expiry continues: its end is reported all the same.
  REQUIRE(sink->wait_for(telemetry_kind::request_completed, 1, patience));
  CHECK(answered_after_expiry(a));
  CHECK(sink->count(telemetry_kind::request_started) == 2);
  CHECK(sink->count(telemetry_kind::request_paused) == 1);  // the pause
}

// A runtime pauses a request and is destroyed; a new runtime on the same
// store (opened again, as a restarted process would) takes the decision and
// finishes the request. `open` gives the store, each time anew.
template <class Open>
void pause_outlives_runtime(Open open) {
  counted_tools tools;
  auto first_model = search_and_send(), second_model = search_and_send();
  {
    runtime first({.provider = first_model, .store = open()});
    tools.add_to(first);
    agent a = first.spawn_agent(supervised());
    const reply paused = must_reply(a.ask("mail bob", {.request_id = "r1"}));
    REQUIRE(paused.paused());
    // The free call's result is committed as it arrives, while the request waits.
    REQUIRE(eventually([&] {
      const auto t = a.snapshot();
      return t && !t->of_kind(entry_kind::tool_result).empty();
    }));
  }
  runtime second({.provider = second_model, .store = open()});
  tools.add_to(second);
  agent a = second.spawn_agent(supervised());
  const reply done = must_reply(a.decide(decide("r1", verdict::approve, "k1")));
  CHECK(answer_of(done) == "done: sent to bob");
  // Each tool ran exactly once over both runtimes, and the model call that
  // asked for them was not made again.
  CHECK(tools.searches == 1);
  CHECK(tools.sends == 1);
  CHECK(first_model->calls() == 1);
  CHECK(second_model->calls() == 1);
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  const auto results = t->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 2);
  CHECK(results[0]->payload.at("result") == "found");  // from the first runtime, not interrupted
  CHECK(t->of_kind(entry_kind::decision).size() == 1);
}

TEST_CASE("a pause outlives its runtime: a new runtime on the same SQLite file continues it") {
  sqlite_file file("troupe-approvals");
  pause_outlives_runtime([&] { return std::make_shared<sqlite_store>(file.path.string()); });
}

TEST_CASE("a pause outlives its runtime: a new runtime on the same PostgreSQL schema continues it") {
  postgres_backend pg;
  if (!pg.ready()) {
    std::cout << pg.why_not() << std::endl;
    return;
  }
  pause_outlives_runtime([&] { return std::make_shared<postgres_store>(pg.uri()); });
}

TEST_CASE("a pause nobody decides takes its rule's default at the deadline") {
  counted_tools tools;
  runtime rt({.provider = search_and_send()});
  tools.add_to(rt);
  agent_spec spec = supervised();
  spec.approvals["send"].timeout_ms = 1;
  agent a = rt.spawn_agent(spec);
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());

  // The agent's tick commits the default (reject) and the request goes on to its answer.
  CHECK(eventually([&] { return answered_after_expiry(a); }));
  CHECK(tools.sends == 0);
  CHECK(decided_by_expiry_alone(a));
}

TEST_CASE("a pause nobody touches after a restart takes its default at the deadline") {
  sqlite_file file("troupe-expiry-restart");
  counted_tools tools;
  agent_spec spec = supervised();
  spec.approvals["send"].timeout_ms = 1'000;
  {
    runtime first({.provider = send_when_asked(), .store = std::make_shared<sqlite_store>(file.path.string())});
    tools.add_to(first);
    agent a = first.spawn_agent(spec);
    REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
  }
  // The first runtime is gone before the deadline: nothing decided yet.
  auto store = std::make_shared<sqlite_store>(file.path.string());
  auto open = store->open_pauses("a");
  REQUIRE(open.has_value());
  REQUIRE(open->size() == 1);
  CHECK((*open)[0].request_id == "r1");

  runtime second({.provider = send_when_asked(), .store = store});
  tools.add_to(second);
  agent a = second.spawn_agent(spec);
  // Nobody asks, decides or cancels: a snapshot reads the store without
  // loading the thread.
  CHECK(eventually([&] { return answered_after_expiry(a); }));
  CHECK(tools.sends == 0);
  CHECK(decided_by_expiry_alone(a));
  CHECK(store->open_pauses("a")->empty());
}

TEST_CASE("a turn's later deadline gets its own tick once the earlier one expired") {
  counted_tools tools;
  runtime rt({.provider = search_and_send()});
  tools.add_to(rt);
  agent_spec spec = supervised();
  spec.approvals["search"] = approval_rule{approval_mode::always, {}, "searches", 1, verdict::reject};
  spec.approvals["send"].timeout_ms = 300;  // after search's deadline
  agent a = rt.spawn_agent(spec);
  REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).pending.size() == 2);
  CHECK(eventually([&] { return answered_after_expiry(a); }));
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(t->of_kind(entry_kind::decision).size() == 2);
  CHECK(tools.searches == 0);
  CHECK(tools.sends == 0);
}

TEST_CASE("a paused thread loaded past its deadline takes the default without anyone deciding") {
  // The thread as a process that died long ago left it: r1 paused on send,
  // its deadline an hour after 1970 began.
  auto store = std::make_shared<memory_store>();
  {
    react_config config;
    config.model = "m";
    config.tools = make_tool_set({tool_spec{"send", "sends", {{"type", "object"}}}});
    config.approvals = std::make_shared<const std::map<std::string, approval_rule, std::less<>>>(
        std::map<std::string, approval_rule, std::less<>>{{"send", approval_rule{approval_mode::always}}});
    react_thread left(thread("a:default", 0));
    sequential_ids ids;
    const applied asked = left.apply(config, query{"r1", "a:default", "mail bob", {}}, 1000, ids);
    const std::string call_id = std::get<llm_stream>(asked.directives.front()).call_id;
    left.apply(config, llm_result{call_id, llm_completion{"", "", {call("s2", "send", {{"to", "bob"}})}, {}, ""}}, 1001,
               ids);
    REQUIRE(left.state().status == react_status::awaiting_input);
    REQUIRE(store->append(left.history(), 0).has_value());
  }
  counted_tools tools;
  runtime rt({.provider = search_and_send(), .store = store});
  tools.add_to(rt);
  agent a = rt.spawn_agent(supervised());
  // An ask loads the thread (and is refused: the request is paused); the
  // load schedules the tick, already due.
  CHECK(error_type_of(must_reply(a.ask("anything?"))) == error_type::busy);
  CHECK(eventually([&] { return answered_after_expiry(a); }));
  CHECK(tools.sends == 0);
}

TEST_CASE("ask_human pauses the request with its question, and the response is what the model reads") {
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (const llm_message& last = s.messages.back(); last.role == "tool")
      return scripted_reply::text("booked for " + last.content);
    return scripted_reply::tools({call("q1", "ask_human", {{"question", "Which day suits you?"}})});
  });
  runtime rt({.provider = model});
  rt.tools().add(ask_human_tool());
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"ask_human"}});
  const reply paused = must_reply(a.ask("book a table", {.request_id = "r1"}));
  REQUIRE(paused.paused());
  REQUIRE(paused.pending.size() == 1);
  CHECK(paused.pending[0].question);
  CHECK(paused.pending[0].reason == "Which day suits you?");

  decision d;
  d.request_id = "r1";
  d.tool_call_id = "q1";
  d.answer = verdict::approve;
  d.response = "Tuesday";
  d.decided_by = "ada";
  CHECK(answer_of(must_reply(a.decide(d))) == "booked for Tuesday");
  CHECK(model->calls() == 2);
}

TEST_CASE("a sticky approval outlives its runtime: after a restart the tool runs without asking") {
  sqlite_file file("troupe-sticky");
  counted_tools tools;
  {
    runtime first({.provider = send_when_asked(), .store = std::make_shared<sqlite_store>(file.path.string())});
    tools.add_to(first);
    agent a = first.spawn_agent(supervised());
    REQUIRE(must_reply(a.ask("mail bob", {.request_id = "r1"})).paused());
    decision d = decide("r1", verdict::approve);
    d.sticky = true;
    REQUIRE(answer_of(must_reply(a.decide(d))) == "done: sent to bob");
  }
  runtime second({.provider = send_when_asked(), .store = std::make_shared<sqlite_store>(file.path.string())});
  tools.add_to(second);
  agent a = second.spawn_agent(supervised());
  CHECK(answer_of(must_reply(a.ask("mail bob", {.request_id = "r2"}))) == "done: sent to bob");
  CHECK(tools.sends == 2);
  const auto t = a.snapshot();
  REQUIRE(t);
  CHECK(t->of_kind(entry_kind::approval_request).size() == 1);
}
