#include "support/react_harness.hpp"

#include "strategy/react_state.hpp"
#include "thread/thread_json.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

std::string role_of(const entry& e) { return std::string(string_field(e.payload, "role").value_or("")); }

// Every tool_call in the thread has exactly one tool_result with its id.
bool every_call_answered(const thread_view& t) {
  for (const entry* c : t.of_kind(entry_kind::tool_call)) {
    const json::value id = c->refs.at("tool_call_id");
    std::size_t results = 0;
    for (const entry* r : t.with_ref("tool_call_id", id))
      if (r->kind == entry_kind::tool_result) ++results;
    if (results != 1) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("an observation starts a request as the user's turn, marked with its origin") {
  harness h;
  query q{"r1", "t", "Your feed: post p1.2.0 by @ada: hello", {}};
  q.observation = observation_origin{"social", 4};
  const llm_stream s = only<llm_stream>(h.feed(q));

  SECTION("the committed message carries the origin") {
    const entry& e = *h.history().last();
    CHECK(role_of(e) == "user");
    CHECK(e.payload.at("content") == "Your feed: post p1.2.0 by @ada: hello");
    CHECK(e.payload.at("observation") == json::object{{"source", "social"}, {"round", 4}});
  }
  SECTION("the model reads it as the user's message") {
    REQUIRE(s.messages.size() == 2);
    CHECK(s.messages[1].role == "user");
    CHECK(s.messages[1].content == "Your feed: post p1.2.0 by @ada: hello");
  }
  SECTION("a question without an origin carries none") {
    harness plain;
    plain.ask("r1", "hello");
    CHECK_FALSE(plain.history().last()->payload.contains("observation"));
  }
}

TEST_CASE("a round's observations share one origin object between agents") {
  harness a, b;
  query qa{"r1", "t", "Nothing new.", {}}, qb{"r1", "t", "Nothing new.", {}};
  qa.observation = qb.observation = observation_origin{"social", 4};
  a.feed(qa);
  b.feed(qb);
  const auto* ea = a.history().last()->payload.get_if<message_payload>();
  const auto* eb = b.history().last()->payload.get_if<message_payload>();
  REQUIRE(ea);
  REQUIRE(eb);
  CHECK(ea->extra.get() == eb->extra.get());
  SECTION("another round's origin is another object, with its own round") {
    harness c;
    query qc{"r2", "t", "Nothing new.", {}};
    qc.observation = observation_origin{"social", 5};
    c.feed(qc);
    CHECK(c.history().last()->payload.at("observation") == json::object{{"source", "social"}, {"round", 5}});
    CHECK(a.history().last()->payload.at("observation") == json::object{{"source", "social"}, {"round", 4}});
  }
}

TEST_CASE("a query starts a request") {
  harness h;
  const llm_stream s = h.ask("r1", "hello");

  SECTION("it commits the user message with the request's refs") {
    REQUIRE(h.history().size() == 1);
    const entry& e = *h.history().last();
    CHECK(e.kind == "message");
    CHECK(role_of(e) == "user");
    CHECK(e.payload.at("content") == "hello");
    CHECK(e.refs.at("request_id") == "r1");
    CHECK(e.refs.at("iteration") == 1);
  }
  SECTION("it emits one llm_stream for iteration 1 with the projected thread") {
    CHECK(s.request_id == "r1");
    CHECK(s.iteration == 1);
    CHECK(s.model == "test-model");
    REQUIRE(s.messages.size() == 2);
    CHECK(s.messages[0].role == "system");
    CHECK(s.messages[0].content == "be brief");
    CHECK(s.messages[1].role == "user");
    CHECK(s.messages[1].content == "hello");
    REQUIRE(s.tools);
    CHECK(s.tools == h.config.tools);  // shared, not copied
  }
  SECTION("the machine awaits the model") {
    CHECK(h.state().status == react_status::awaiting_llm);
    CHECK(h.state().call_id == s.call_id);
    CHECK(h.state().request_id == "r1");
  }
}

TEST_CASE("per-request overrides take precedence over the configuration") {
  harness h;
  h.config.params.temperature = 0.2;
  h.config.params.max_tokens = 100;
  query q{"r1", "t", "hi", {}};
  q.overrides.model = "other-model";
  q.overrides.system_prompt = "be verbose";
  q.overrides.params.max_tokens = 500;
  const llm_stream s = only<llm_stream>(h.feed(q));
  CHECK(s.model == "other-model");
  CHECK(s.messages.front().content == "be verbose");
  CHECK(s.params.max_tokens == 500);
  CHECK(s.params.temperature == 0.2);
}

TEST_CASE("an agent's own system prompt stands for the shared configuration's") {
  const react_config shared = config_with_tools({"search"});  // its prompt: "be brief"
  const react_state idle;
  const thread t("t", 0);
  sequential_ids ids;
  auto first_message = [&](const query& q, std::optional<std::string_view> own) {
    const step_result r = step(shared, idle, t, q, 1, ids, own);
    return only<llm_stream>(r.directives).messages.front();
  };
  const query q{"r1", "t", "hi", {}};
  CHECK(first_message(q, std::nullopt).content == "be brief");
  CHECK(first_message(q, "a persona").content == "a persona");
  CHECK(first_message(q, "").role == "user");  // an empty prompt sends no system message

  query overridden = q;
  overridden.overrides.system_prompt = "be verbose";  // a request's override still wins
  CHECK(first_message(overridden, "a persona").content == "be verbose");
}

TEST_CASE("a query while a request runs is rejected as busy") {
  harness h;
  h.ask("r1", "first");
  const auto before_state = h.state();
  const auto before_size = h.history().size();
  const auto out = h.feed(query{"r2", "t", "second", {}});

  const auto err = only<request_error>(out);
  CHECK(out.size() == 1);
  CHECK(err.request_id == "r2");
  CHECK(err.reason == "busy");
  CHECK_THAT(err.message, Catch::Contains("r1") && Catch::Contains("awaiting_llm"));
  CHECK(h.state() == before_state);
  CHECK(h.history().size() == before_size);
}

TEST_CASE("an empty question is rejected without touching the thread") {
  harness h;
  const auto err = only<request_error>(h.feed(query{"r1", "t", "  \n", {}}));
  CHECK(err.reason == "invalid_query");
  CHECK(h.history().empty());
  CHECK(h.state().status == react_status::idle);
}

TEST_CASE("streamed deltas accumulate without being committed") {
  harness h;
  const llm_stream s = h.ask("r1", "hi");

  SECTION("deltas for the current call accumulate text and thinking") {
    h.feed(llm_delta{s.call_id, "Hel", "hmm"});
    h.feed(llm_delta{s.call_id, "lo", ""});
    CHECK(h.state().streamed_text == "Hello");
    CHECK(h.state().streamed_thinking == "hmm");
    CHECK(h.history().size() == 1);
  }
  SECTION("a delta for another call is ignored") {
    const auto out = h.feed(llm_delta{"call-other", "stale", ""});
    CHECK(out.empty());
    CHECK(h.state().streamed_text.empty());
  }
  SECTION("a final result without text uses the streamed text") {
    h.feed(llm_delta{s.call_id, "streamed answer", ""});
    const auto r = only<reply>(h.feed(answer(s.call_id, "")));
    CHECK(std::get<std::string>(r.outcome) == "streamed answer");
    CHECK(h.history().last()->payload.at("content") == "streamed answer");
  }
}

TEST_CASE("a final answer completes the request") {
  harness h;
  const llm_stream s = h.ask("r1", "hi");
  const auto out = h.feed(answer(s.call_id, "hello there", token_usage{10, 3}));

  const auto r = only<reply>(out);
  CHECK(r.request_id == "r1");
  CHECK(std::get<std::string>(r.outcome) == "hello there");
  CHECK(r.usage == token_usage{10, 3});
  CHECK(r.iterations == 1);
  CHECK(h.state().status == react_status::completed);
  const entry& e = *h.history().last();
  CHECK(role_of(e) == "assistant");
  CHECK(e.payload.at("content") == "hello there");
  CHECK(e.refs.at("call_id") == json::value(s.call_id));
}

TEST_CASE("a result for a call that is not current is ignored") {
  harness h;
  const llm_stream s = h.ask("r1", "hi");
  const auto size = h.history().size();
  CHECK(h.feed(answer("call-stale", "late")).empty());
  CHECK(h.history().size() == size);
  CHECK(h.state().status == react_status::awaiting_llm);
  CHECK(h.state().call_id == s.call_id);
}

TEST_CASE("tool calls are committed and executed") {
  harness h;
  const llm_stream s = h.ask("r1", "look things up");
  const auto out =
      h.feed(wants_tools(s.call_id, {call("a", "search", {{"q", "x"}}), call("b", "lookup", {{"id", 7}})}));

  SECTION("one tool_call entry per call, with correlation refs") {
    const auto calls = h.history().of_kind(entry_kind::tool_call);
    REQUIRE(calls.size() == 2);
    CHECK(calls[0]->payload.at("name") == "search");
    CHECK(calls[0]->payload.at("arguments") == json::object{{"q", "x"}});
    CHECK(calls[0]->refs.at("tool_call_id") == "a");
    CHECK(calls[0]->refs.at("call_id") == json::value(s.call_id));
    CHECK(calls[0]->refs.at("request_id") == "r1");
    CHECK(calls[0]->refs.at("iteration") == 1);
    CHECK(calls[1]->refs.at("tool_call_id") == "b");
  }
  SECTION("one tool_exec per call, all at once") {
    const auto execs = all_of_type<tool_exec>(out);
    REQUIRE(execs.size() == 2);
    CHECK(execs[0].tool_call_id == "a");
    CHECK(execs[0].tool_name == "search");
    CHECK(execs[0].call_id == s.call_id);
    CHECK(execs[0].timeout_ms == h.config.tool_timeout_ms);
    CHECK(execs[1].tool_call_id == "b");
    CHECK(execs[1].arguments == json::object{{"id", 7}});
    CHECK(h.state().status == react_status::awaiting_tools);
  }
}

TEST_CASE("parallel tool results arriving out of order are committed in call order") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  const auto execs = all_of_type<tool_exec>(
      h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "lookup"), call("c", "search")})));
  REQUIRE(execs.size() == 3);

  CHECK(h.feed(result_of(execs[2], "C")).empty());
  CHECK(h.feed(result_of(execs[0], "A")).empty());
  CHECK(h.history().of_kind(entry_kind::tool_result).empty());  // held until all are in
  const llm_stream next = only<llm_stream>(h.feed(result_of(execs[1], "B")));

  const auto results = h.history().of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 3);
  CHECK(results[0]->refs.at("tool_call_id") == "a");
  CHECK(results[0]->payload.at("result") == "A");
  CHECK(results[1]->refs.at("tool_call_id") == "b");
  CHECK(results[2]->refs.at("tool_call_id") == "c");

  SECTION("the next model call is iteration 2 and sees the calls grouped with their results") {
    CHECK(next.iteration == 2);
    CHECK(next.call_id != s.call_id);
    REQUIRE(next.messages.size() == 6);  // system, user, assistant(3 calls), 3 tool results
    CHECK(next.messages[2].role == "assistant");
    CHECK(next.messages[2].tool_calls.size() == 3);
    CHECK(next.messages[3].role == "tool");
    CHECK(next.messages[3].tool_call_id == "a");
    CHECK(next.messages[3].content == "A");
    CHECK(next.messages[5].tool_call_id == "c");
  }
}

TEST_CASE("tool results that do not belong are ignored") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  const auto execs = all_of_type<tool_exec>(h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "search")})));

  SECTION("an unknown tool_call_id") {
    CHECK(h.feed(tool_result{s.call_id, "zzz", "search", json::value("x")}).empty());
    CHECK(h.state().tool_calls.at(0).outcome == std::nullopt);
  }
  SECTION("a result from another model call") {
    CHECK(h.feed(tool_result{"call-old", "a", "search", json::value("x")}).empty());
    CHECK(h.state().tool_calls.at(0).outcome == std::nullopt);
  }
  SECTION("a second result for the same call") {
    h.feed(result_of(execs[0], "first"));
    h.feed(result_of(execs[0], "second"));
    CHECK(std::get<json::value>(*h.state().tool_calls.at(0).outcome) == "first");
  }
}

TEST_CASE("a call to a tool that is not configured gets an error result at once") {
  harness h;
  const llm_stream s = h.ask("r1", "go");

  SECTION("alone, the loop goes straight on to the next model call") {
    const auto out = h.feed(wants_tools(s.call_id, {call("x", "launch_rockets")}));
    CHECK(all_of_type<tool_exec>(out).empty());
    const llm_stream next = only<llm_stream>(out);
    CHECK(next.iteration == 2);
    const entry& r = *h.history().of_kind(entry_kind::tool_result).at(0);
    CHECK(r.payload.at("error").at("type") == "unknown_tool");
    CHECK_THAT(std::string(r.payload.at("error").at("message").as_string()),
               Catch::Contains("launch_rockets") && Catch::Contains("search"));
    CHECK(next.messages.back().role == "tool");
    CHECK_THAT(next.messages.back().content, Catch::Contains("unknown_tool"));
  }
  SECTION("next to a real call, only the real one runs and order is kept") {
    const auto out = h.feed(wants_tools(s.call_id, {call("x", "nope"), call("y", "search")}));
    const auto exec = only<tool_exec>(out);
    CHECK(exec.tool_call_id == "y");
    h.feed(result_of(exec, "ok"));
    const auto results = h.history().of_kind(entry_kind::tool_result);
    REQUIRE(results.size() == 2);
    CHECK(results[0]->refs.at("tool_call_id") == "x");
    CHECK(results[1]->refs.at("tool_call_id") == "y");
  }
}

TEST_CASE("a tool call whose arguments were not valid JSON is answered with invalid_arguments") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  tool_call bad = call("x", "search");
  bad.invalid_arguments = "{\"q\": ";
  const auto out = h.feed(wants_tools(s.call_id, {bad}));
  CHECK(all_of_type<tool_exec>(out).empty());
  const entry& r = *h.history().of_kind(entry_kind::tool_result).at(0);
  CHECK(r.payload.at("error").at("type") == "invalid_arguments");
  CHECK(h.history().of_kind(entry_kind::tool_call).at(0)->payload.at("invalid_arguments") == "{\"q\": ");
}

TEST_CASE("tool calls without an id, or with a repeated id, get ids of their own") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  const auto execs = all_of_type<tool_exec>(
      h.feed(wants_tools(s.call_id, {call("", "search"), call("d", "search"), call("d", "lookup")})));
  REQUIRE(execs.size() == 3);
  CHECK(!execs[0].tool_call_id.empty());
  CHECK(execs[1].tool_call_id == "d");
  CHECK(execs[2].tool_call_id != "d");
  CHECK(execs[0].tool_call_id != execs[2].tool_call_id);
}

TEST_CASE("assistant text that comes with tool calls is kept in the same assistant message") {
  harness h;
  const llm_stream s = h.ask("r1", "go");
  llm_result r = wants_tools(s.call_id, {call("a", "search")});
  std::get<llm_completion>(r.outcome).text = "Let me search.";
  const auto exec = only<tool_exec>(h.feed(r));
  const llm_stream next = only<llm_stream>(h.feed(result_of(exec, 1)));
  REQUIRE(next.messages.size() == 4);
  CHECK(next.messages[2].role == "assistant");
  CHECK(next.messages[2].content == "Let me search.");
  CHECK(next.messages[2].tool_calls.size() == 1);
}

TEST_CASE("past max_iterations the request ends instead of calling the model again") {
  harness h(config_with_tools({"search"}, 2));
  llm_stream s = h.ask("r1", "loop forever");
  auto exec = only<tool_exec>(h.feed(wants_tools(s.call_id, {call("a", "search")})));
  s = only<llm_stream>(h.feed(result_of(exec, 1)));
  CHECK(s.iteration == 2);
  exec = only<tool_exec>(h.feed(wants_tools(s.call_id, {call("b", "search")})));
  const auto out = h.feed(result_of(exec, 2));

  CHECK(all_of_type<llm_stream>(out).empty());
  const auto r = only<reply>(out);
  CHECK(std::get<error_info>(r.outcome).type == "max_iterations");
  CHECK(r.iterations == 2);
  CHECK(h.state().status == react_status::error);
  CHECK(h.history().last()->kind == "error");
  CHECK(every_call_answered(h.history()));

  SECTION("a per-request max_iterations override applies") {
    query q{"r2", "t", "again", {}};
    q.overrides.max_iterations = 1;
    s = only<llm_stream>(h.feed(q));
    exec = only<tool_exec>(h.feed(wants_tools(s.call_id, {call("c", "search")})));
    CHECK(std::get<error_info>(only<reply>(h.feed(result_of(exec, 3))).outcome).type == "max_iterations");
  }
}

// That a projection from kept units equals a fresh one is the property test
// in test_context_projection.cpp; here, only when they are kept.
TEST_CASE("a thread keeps its last context's units while a request runs, and not after it") {
  harness h;
  llm_stream s = h.ask("r1", "hi");
  CHECK(h.state().projection.value);  // the second call of this request reuses them
  const tool_exec exec = only<tool_exec>(h.feed(wants_tools(s.call_id, {call("c", "search")})));
  s = only<llm_stream>(h.feed(result_of(exec, 1)));
  CHECK(h.state().projection.value);

  SECTION("an answer drops them") {
    h.feed(answer(s.call_id, "done"));
    CHECK(!h.state().projection.value);
  }
  SECTION("an error drops them") {
    h.feed(llm_result{s.call_id, error_info{"rate_limited", "slow down", 429, 3, 2.0}});
    CHECK(!h.state().projection.value);
  }
  SECTION("a request abandoned outside the machine (its store failed) drops them") {
    h.rt.abandon_request(error_info{"store_failed", "the disk is full", {}, {}, {}});
    CHECK(!h.state().projection.value);
  }
}

TEST_CASE("a model error ends the request and the thread stays usable") {
  harness h;
  llm_stream s = h.ask("r1", "hi");
  const error_info rate_limited{"rate_limited", "slow down", 429, 3, 2.0};
  const auto r = only<reply>(h.feed(llm_result{s.call_id, rate_limited}));

  CHECK(std::get<error_info>(r.outcome) == rate_limited);
  CHECK(h.state().status == react_status::error);
  CHECK(h.state().error == rate_limited);
  CHECK(h.history().last()->kind == "error");
  CHECK(h.history().last()->payload.at("type") == "rate_limited");

  s = h.ask("r2", "try again");
  CHECK(only<reply>(h.feed(answer(s.call_id, "ok"))).ok());
  CHECK(h.state().status == react_status::completed);
  CHECK(!h.state().error);
}

TEST_CASE("cancel stops the active request") {
  harness h;

  SECTION("while the model streams: the call is cancelled and the request ends") {
    const llm_stream s = h.ask("r1", "hi");
    h.feed(llm_delta{s.call_id, "partial", ""});
    const auto out = h.feed(cancel{"r1", "user pressed ctrl-c"});
    CHECK(only<cancel_call>(out).call_id == s.call_id);
    const auto r = only<reply>(out);
    CHECK(std::get<error_info>(r.outcome).type == "cancelled");
    CHECK(std::get<error_info>(r.outcome).message == "user pressed ctrl-c");
    CHECK(h.state().status == react_status::error);
    CHECK(h.history().of_kind(entry_kind::message).size() == 1);  // partial text not committed

    SECTION("a late result of the cancelled call is dropped") {
      const auto size = h.history().size();
      CHECK(h.feed(answer(s.call_id, "too late")).empty());
      CHECK(h.history().size() == size);
    }
  }
  SECTION("while tools run: each running tool is cancelled and gets an interrupted result") {
    const llm_stream s = h.ask("r1", "hi");
    const auto execs = all_of_type<tool_exec>(
        h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "lookup"), call("c", "search")})));
    h.feed(result_of(execs[1], "done"));
    const auto out = h.feed(cancel{"r1", ""});

    const auto cancels = all_of_type<cancel_call>(out);
    REQUIRE(cancels.size() == 2);
    CHECK(cancels[0].tool_call_id == "a");
    CHECK(cancels[1].tool_call_id == "c");
    CHECK(cancels[0].call_id == s.call_id);
    const auto results = h.history().of_kind(entry_kind::tool_result);
    REQUIRE(results.size() == 3);
    CHECK(results[0]->payload.at("error").at("type") == "interrupted");
    CHECK(results[1]->payload.at("result") == "done");
    CHECK(results[2]->payload.at("error").at("type") == "interrupted");
    CHECK(every_call_answered(h.history()));
    CHECK(std::get<error_info>(only<reply>(out).outcome).type == "cancelled");

    SECTION("a late tool result is dropped") {
      const auto size = h.history().size();
      CHECK(h.feed(result_of(execs[0], "late")).empty());
      CHECK(h.history().size() == size);
    }
  }
  SECTION("a cancel for another request is ignored") {
    h.ask("r1", "hi");
    const auto state = h.state();
    CHECK(h.feed(cancel{"r-other", ""}).empty());
    CHECK(h.state() == state);
  }
  SECTION("a cancel after the request finished is ignored") {
    const llm_stream s = h.ask("r1", "hi");
    h.feed(answer(s.call_id, "done"));
    CHECK(h.feed(cancel{"r1", ""}).empty());
    CHECK(h.state().status == react_status::completed);
  }
}

TEST_CASE("a new query continues the same thread with its history") {
  harness h;
  llm_stream s = h.ask("r1", "my name is Ada");
  h.feed(answer(s.call_id, "Hello Ada"));
  s = h.ask("r2", "what is my name?");

  REQUIRE(s.messages.size() == 4);
  CHECK(s.messages[1].content == "my name is Ada");
  CHECK(s.messages[2].role == "assistant");
  CHECK(s.messages[2].content == "Hello Ada");
  CHECK(s.messages[3].content == "what is my name?");
  CHECK(s.iteration == 1);
  CHECK(h.history().last()->refs.at("request_id") == "r2");
}

TEST_CASE("usage is summed per request and per thread") {
  harness h;
  llm_stream s = h.ask("r1", "go");
  auto exec = only<tool_exec>(h.feed(wants_tools(s.call_id, {call("a", "search")}, token_usage{100, 10})));
  s = only<llm_stream>(h.feed(result_of(exec, 1)));
  auto r = only<reply>(h.feed(answer(s.call_id, "done", token_usage{150, 5})));
  CHECK(r.usage == token_usage{250, 15});

  s = h.ask("r2", "again");
  SECTION("a result without usage is counted as a call without usage, not as zero tokens") {
    r = only<reply>(h.feed(answer(s.call_id, "ok")));
    CHECK(r.usage == token_usage{0, 0, 1});
    CHECK(h.state().thread_usage == token_usage{250, 15, 1});
  }
  SECTION("the thread total keeps growing across requests") {
    r = only<reply>(h.feed(answer(s.call_id, "ok", token_usage{7, 1})));
    CHECK(r.usage == token_usage{7, 1});
    CHECK(h.state().thread_usage == token_usage{257, 16});
  }
}

TEST_CASE("the machine is deterministic") {
  // The same signals with the same clock and ids give byte-identical output.
  auto run = [] {
    harness h;
    std::string trace;
    auto record = [&](const std::vector<directive>& ds) {
      for (const auto& d : ds) trace += json::serialize(to_json(d)) + "\n";
    };
    llm_stream s = h.ask("r1", "go");
    record(h.last.directives);
    const auto out = h.feed(wants_tools(s.call_id, {call("a", "search"), call("b", "lookup")}));
    record(out);
    const auto execs = all_of_type<tool_exec>(out);
    record(h.feed(result_of(execs[1], json::object{{"n", 2}})));
    record(h.feed(result_of(execs[0], json::array{1, 2})));
    s = std::get<llm_stream>(h.last.directives.front());
    record(h.feed(answer(s.call_id, "done", token_usage{3, 4})));
    return trace + json::serialize(to_json(h.history())) + json::serialize(to_json(h.state()));
  };
  const std::string first = run();
  CHECK(first == run());
  CHECK_THAT(first, Catch::Contains("\"type\":\"reply\""));
}

TEST_CASE("a retried query of a request cut off with a tool call running answers the call interrupted and goes on") {
  harness h;
  const llm_stream first = h.ask("r1", "look it up");
  h.feed(wants_tools(first.call_id, {call("t1", "search")}));
  // What a process that died here left: the thread, and a machine that knows nothing of it.
  harness later;
  later.rt = react_thread(h.history());
  later.ids = h.ids;
  query retry{"r1", "t", "look it up", {}};
  retry.retry = true;
  const auto out = later.feed(retry);

  const llm_stream next = only<llm_stream>(out);
  CHECK(next.request_id == "r1");
  CHECK(next.iteration == 2);
  REQUIRE(!next.messages.empty());
  CHECK(next.messages.back().role == "tool");
  CHECK_THAT(next.messages.back().content, Catch::Contains("interrupted"));
  CHECK(all_of_type<tool_exec>(out).empty());  // not run again
  const entry& result = *later.history().last();
  CHECK(result.kind == "tool_result");
  CHECK(result.refs.tool_call_id() == "t1");
  std::size_t questions = 0;
  for (const entry* e : later.history().of_kind("message")) questions += role_of(*e) == "user";
  CHECK(questions == 1);
  CHECK(later.state().status == react_status::awaiting_llm);
  CHECK(later.state().request_id == "r1");
}
