#include "support/react_harness.hpp"

#include "strategy/approvals.hpp"
#include "strategy/inner_pause.hpp"
#include "strategy/react_state.hpp"
#include "strategy/recovery.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <stdexcept>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

constexpr std::int64_t hour = 3'600'000;

// search runs freely; send waits for a person; wire asks above 100; each
// rule with a one-hour deadline.
react_config approval_config() {
  react_config c = config_with_tools({"search", "send", "wire"});
  std::map<std::string, approval_rule, std::less<>> rules;
  rules["search"] = approval_rule{};
  rules["send"] = approval_rule{approval_mode::always, {}, "sends an email", hour, verdict::reject};
  rules["wire"] = approval_rule{approval_mode::predicate,
                                [](const json::object& a) {
                                  if (!a.contains("amount")) throw std::runtime_error("no amount");
                                  return a.at("amount").to_number<double>() > 100;
                                },
                                {},
                                hour,
                                verdict::reject};
  c.approvals = std::make_shared<const std::map<std::string, approval_rule, std::less<>>>(std::move(rules));
  return c;
}

std::vector<const entry*> of_kind(const harness& h, std::string_view kind) { return h.history().of_kind(kind); }

decision decide(std::string tool_call_id, verdict v, std::string key = {}) {
  decision d;
  d.request_id = "r1";
  d.tool_call_id = std::move(tool_call_id);
  d.answer = v;
  d.decided_by = "ada";
  d.idempotency_key = std::move(key);
  return d;
}

const tool_result_payload* result_for(const harness& h, std::string_view tool_call_id) {
  for (const entry* e : of_kind(h, entry_kind::tool_result))
    if (e->refs.tool_call_id() == tool_call_id) return e->payload.get_if<tool_result_payload>();
  return nullptr;
}

// Asks r1 and answers its first model call with `calls`; returns what that step directed.
std::vector<directive> pause_with(harness& h, std::vector<tool_call> calls) {
  const llm_stream s = h.ask("r1", "do things");
  return h.feed(wants_tools(s.call_id, std::move(calls)));
}

}  // namespace

TEST_CASE("a call that needs approval waits while the others of the turn run") {
  harness h(approval_config());
  const auto out = pause_with(h, {call("a", "search", {{"q", "x"}}), call("b", "send", {{"to", "bob"}})});

  SECTION("only the call that needs no approval is executed") {
    const tool_exec t = only<tool_exec>(out);
    CHECK(t.tool_call_id == "a");
  }
  SECTION("the waiting call gets an approval_request entry with its deadline") {
    const auto requests = of_kind(h, entry_kind::approval_request);
    REQUIRE(requests.size() == 1);
    const entry& r = *requests.front();
    CHECK(r.refs.tool_call_id() == "b");
    CHECK(r.refs.request_id() == "r1");
    CHECK(r.payload.at("tool") == "send");
    CHECK(r.payload.at("arguments") == json::object{{"to", "bob"}});
    CHECK(r.payload.at("reason") == "sends an email");
    CHECK(r.payload.at("expires_at") == h.now + hour);
  }
  SECTION("the request ends its step awaiting input, listing its open requests") {
    CHECK(h.state().status == react_status::awaiting_input);
    const awaiting_input pause = only<awaiting_input>(out);
    CHECK(pause.request_id == "r1");
    REQUIRE(pause.pending.size() == 1);
    CHECK(pause.pending[0] == open_approval{"b", "send", {{"to", "bob"}}, "sends an email", h.now + hour});
    CHECK(pause.next_expiry() == h.now + hour);
  }
  SECTION("the free call's result is committed as it arrives, and the request stays paused") {
    const tool_exec t = only<tool_exec>(out);
    CHECK(h.feed(result_of(t, "found")).empty());
    REQUIRE(result_for(h, "a"));
    CHECK(h.state().status == react_status::awaiting_input);
  }
  SECTION("a new query is refused as busy while the request is paused") {
    const auto err = only<request_error>(h.feed(query{"r2", "t", "again", {}}));
    CHECK(err.reason == error_type::busy);
    CHECK_THAT(err.message, Catch::Contains("awaiting_input"));
  }
}

TEST_CASE("a predicate rule asks by the arguments, and denies when it throws") {
  harness h(approval_config());
  const auto out = pause_with(h, {call("small", "wire", {{"amount", 5}}), call("big", "wire", {{"amount", 500}}),
                                  call("bad", "wire", {{"to", "x"}})});
  const auto execs = all_of_type<tool_exec>(out);
  REQUIRE(execs.size() == 1);
  CHECK(execs[0].tool_call_id == "small");
  const auto requests = of_kind(h, entry_kind::approval_request);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0]->refs.tool_call_id() == "big");
  CHECK(requests[0]->payload.at("reason") == "wire requires approval");
  // The throwing predicate neither runs the call nor asks: the model reads the denial.
  const tool_result_payload* denied = result_for(h, "bad");
  REQUIRE(denied);
  CHECK(denied->is_error());
  CHECK(denied->outcome_json().at("type") == "denied");
  CHECK_THAT(std::string(denied->outcome_json().at("message").as_string()), Catch::Contains("no amount"));
}

TEST_CASE("decisions: approve runs the call, reject answers it, edit runs it with other arguments") {
  harness h(approval_config());
  pause_with(h, {call("b", "send", {{"to", "bob"}})});
  const std::int64_t asked_at = h.now;

  SECTION("approve commits the decision, then executes the call as the model asked") {
    const auto out = h.feed(decide("b", verdict::approve, "k1"));
    CHECK(only<decision_answer>(out).ok());
    const tool_exec t = only<tool_exec>(out);
    CHECK(t.arguments == json::object{{"to", "bob"}});
    const entry& d = *h.history().last();
    CHECK(d.kind == entry_kind::decision);
    CHECK(d.refs.tool_call_id() == "b");
    CHECK(d.payload.at("verdict") == "approve");
    CHECK(d.payload.at("decided_by") == "ada");
    CHECK(d.payload.at("idempotency_key") == "k1");
    CHECK(d.at > asked_at);
    CHECK(h.state().status == react_status::awaiting_tools);
    SECTION("and the request continues to the next model call exactly as without approvals") {
      const llm_stream next = only<llm_stream>(h.feed(result_of(t, "sent")));
      CHECK(next.iteration == 2);
      CHECK(next.messages.back().role == "tool");
      CHECK(next.messages.back().content == "sent");
    }
  }
  SECTION("reject answers the call with the message, which the model reads") {
    decision d = decide("b", verdict::reject);
    d.message = "not to bob";
    const auto out = h.feed(d);
    CHECK(only<decision_answer>(out).ok());
    CHECK(all_of_type<tool_exec>(out).empty());
    const tool_result_payload* r = result_for(h, "b");
    REQUIRE(r);
    CHECK(r->outcome_json().at("type") == "rejected");
    CHECK(r->outcome_json().at("message") == "not to bob");
    const llm_stream next = only<llm_stream>(out);
    CHECK_THAT(next.messages.back().content, Catch::Contains("not to bob"));
  }
  SECTION("edit executes the call with the edited arguments and records them") {
    decision d = decide("b", verdict::edit);
    d.arguments = {{"to", "carol"}};
    const auto out = h.feed(d);
    CHECK(only<tool_exec>(out).arguments == json::object{{"to", "carol"}});
    CHECK(h.history().last()->payload.at("arguments") == json::object{{"to", "carol"}});
  }
}

TEST_CASE("partial decisions: the turn goes on only when every call has an outcome") {
  harness h(approval_config());
  pause_with(h, {call("b", "send", {{"to", "bob"}}), call("c", "send", {{"to", "carol"}})});

  const auto first = h.feed(decide("c", verdict::approve));
  const tool_exec t = only<tool_exec>(first);
  CHECK(t.tool_call_id == "c");
  CHECK(all_of_type<llm_stream>(h.feed(result_of(t, "sent"))).empty());
  CHECK(h.state().status == react_status::awaiting_input);  // b still waits

  const auto last = h.feed(decide("b", verdict::reject));
  const llm_stream next = only<llm_stream>(last);
  CHECK(next.iteration == 2);
  // Every call answered once, in the thread.
  CHECK(of_kind(h, entry_kind::tool_result).size() == 2);
}

TEST_CASE("decisions that cannot be taken are typed errors that commit nothing") {
  harness h(approval_config());
  const tool_exec search = only<tool_exec>(pause_with(h, {call("a", "search"), call("b", "send")}));
  auto refused = [&](const decision& d) {
    const auto size = h.history().size();
    const auto out = h.feed(d);
    CHECK(h.history().size() == size);
    CHECK(all_of_type<tool_exec>(out).empty());
    const decision_answer a = only<decision_answer>(out);
    REQUIRE(a.error);
    return a.error->type;
  };

  SECTION("for another request") {
    decision d = decide("b", verdict::approve);
    d.request_id = "r9";
    CHECK(refused(d) == error_type::not_found);
  }
  SECTION("for a call that does not exist") { CHECK(refused(decide("zz", verdict::approve)) == error_type::not_found); }
  SECTION("for a call that needed no approval") {
    CHECK(refused(decide("a", verdict::approve)) == error_type::not_found);
  }
  SECTION("for a call decided already") {
    const tool_exec send = only<tool_exec>(h.feed(decide("b", verdict::approve, "k1")));
    CHECK(refused(decide("b", verdict::reject, "k2")) == error_type::already_decided);
    SECTION("or once the request is gone") {
      h.feed(result_of(search, "ok"));
      h.feed(result_of(send, "ok"));
      h.feed(answer(h.state().call_id.str(), "done"));
      REQUIRE(h.state().status == react_status::completed);
      CHECK(refused(decide("b", verdict::reject, "k3")) == error_type::already_decided);
    }
  }
  SECTION("a repeated decision with the same key is answered as the first, and runs nothing again") {
    CHECK(only<tool_exec>(h.feed(decide("b", verdict::approve, "k1"))).tool_call_id == "b");
    const auto size = h.history().size();
    const auto again = h.feed(decide("b", verdict::approve, "k1"));
    CHECK(again.size() == 1);
    CHECK(only<decision_answer>(again).ok());
    CHECK(h.history().size() == size);
  }
}

TEST_CASE("a pause past its deadline takes the rule's default") {
  harness h(approval_config());
  pause_with(h, {call("b", "send", {{"to", "bob"}})});
  const std::int64_t deadline = h.now + hour;

  SECTION("a tick before the deadline changes nothing") {
    const auto state = h.state();
    CHECK(h.feed(approval_tick{"r1"}).empty());
    CHECK(h.state() == state);
  }
  SECTION("a tick past it commits a rejection by default, and the model reads it") {
    h.now = deadline;
    const auto out = h.feed(approval_tick{"r1"});
    const entry* d = find_decision(h.history(), "r1", "b");
    REQUIRE(d);
    CHECK(d->payload.at("verdict") == "reject");
    CHECK(d->payload.at("expired") == true);
    CHECK(d->payload.at("decided_by") == "expiry");
    REQUIRE(result_for(h, "b"));
    CHECK(result_for(h, "b")->outcome_json().at("type") == "expired");
    CHECK(only<llm_stream>(out).iteration == 2);
  }
  SECTION("a tick past it approves when the rule says so") {
    auto rules = std::make_shared<std::map<std::string, approval_rule, std::less<>>>(*h.config.approvals);
    (*rules)["send"].on_expiry = verdict::approve;
    h.config.approvals = rules;
    h.now = deadline;
    CHECK(only<tool_exec>(h.feed(approval_tick{"r1"})).tool_call_id == "b");
  }
  SECTION("a decision past it is refused as expired, and the default is committed") {
    h.now = deadline;
    const auto out = h.feed(decide("b", verdict::approve));
    const decision_answer a = only<decision_answer>(out);
    REQUIRE(a.error);
    CHECK(a.error->type == error_type::expired);
    CHECK(all_of_type<tool_exec>(out).empty());
    CHECK(find_decision(h.history(), "r1", "b")->payload.at("expired") == true);
  }
}

TEST_CASE("a cancelled pause answers every call and ends the request") {
  harness h(approval_config());
  const auto out = pause_with(h, {call("a", "search"), call("b", "send")});
  const auto end = h.feed(cancel{"r1", "", ""});
  CHECK(h.state().status == react_status::error);
  CHECK(!only<reply>(end).ok());
  // Only the running call is stopped: the waiting one never started.
  CHECK(only<cancel_call>(end).tool_call_id == "a");
  CHECK(result_for(h, "b")->outcome_json().at("type") == "cancelled");
  const entry* decided = find_decision(h.history(), "r1", "b");
  REQUIRE(decided);
  CHECK(decided->payload.at("decided_by") == "cancel");
  CHECK(decided->payload.at("verdict") == "reject");
  CHECK(open_approval_requests(h.history()).empty());
  CHECK(!paused_request(h.history()));
}

TEST_CASE("a cancel whose sender waits is answered before the request's end") {
  harness h(approval_config());
  pause_with(h, {call("b", "send")});
  SECTION("for the paused request: taken, then the request ends cancelled") {
    const auto end = h.feed(cancel{"r1", "nobody will decide", "", true});
    REQUIRE(end.size() >= 2);
    const auto* answer = std::get_if<decision_answer>(&end.front());
    REQUIRE(answer);
    CHECK(answer->ok());
    CHECK(answer->taken);
    CHECK(answer->tool_call_id.empty());
    CHECK(std::get<error_info>(only<reply>(end).outcome).type == error_type::cancelled);
    CHECK(result_for(h, "b")->outcome_json().at("type") == "cancelled");
  }
  SECTION("for another request: not_found, and the pause stays") {
    const auto out = h.feed(cancel{"r9", "", "", true});
    const decision_answer answer = only<decision_answer>(out);
    REQUIRE(answer.error);
    CHECK(answer.error->type == error_type::not_found);
    CHECK(h.state().status == react_status::awaiting_input);
  }
}

TEST_CASE("a paused thread is rebuilt paused, and a decision after a restart continues it") {
  harness h(approval_config());
  const auto out = pause_with(h, {call("a", "search"), call("b", "send", {{"to", "bob"}}), call("c", "send")});
  h.feed(result_of(only<tool_exec>(out), "found"));                            // a finished before the restart
  const auto c_exec = only<tool_exec>(h.feed(decide("c", verdict::approve)));  // c was running when it stopped
  REQUIRE(c_exec.tool_call_id == "c");
  const react_state before = h.state();

  // The restart: only the thread survives.
  thread t(h.history().snapshot());
  const auto repairs = interrupted_tool_results(t);
  REQUIRE(repairs.size() == 1);  // c, not b: b has not run
  CHECK(repairs[0].refs.tool_call_id() == "c");
  t.append(std::vector<entry_draft>(repairs), h.now, h.ids);

  const std::optional<react_state> paused = paused_request(t);
  REQUIRE(paused);
  CHECK(paused->status == react_status::awaiting_input);
  CHECK(paused->request_id == "r1");
  CHECK(paused->call_id == before.call_id);
  CHECK(paused->iteration == 1);
  REQUIRE(paused->tool_calls.size() == 3);
  CHECK(paused->tool_calls[0].outcome == tool_outcome(json::value("found")));
  CHECK(paused->tool_calls[1].awaiting_until == before.tool_calls[1].awaiting_until);
  CHECK(!paused->tool_calls[1].outcome);
  CHECK(std::get<error_info>(*paused->tool_calls[2].outcome).type == error_type::interrupted);
  CHECK(pending_approvals(t, "r1") ==
        std::vector<open_approval>{
            {"b", "send", {{"to", "bob"}}, "sends an email", before.tool_calls[1].awaiting_until}});

  harness after(approval_config());
  after.rt = react_thread(std::move(t), *paused);
  after.now = h.now;
  const auto resumed = after.feed(decide("b", verdict::approve));
  // Only b runs: neither the model call nor a or c is made again.
  const tool_exec b = only<tool_exec>(resumed);
  CHECK(b.tool_call_id == "b");
  CHECK(all_of_type<llm_stream>(resumed).empty());
  const llm_stream next = only<llm_stream>(after.feed(result_of(b, "sent")));
  CHECK(next.iteration == 2);
  // Every call of the turn answered exactly once.
  for (const char* id : {"a", "b", "c"}) {
    std::size_t n = 0;
    for (const entry* e : after.history().of_kind(entry_kind::tool_result)) n += e->refs.tool_call_id() == id;
    CHECK(n == 1);
  }
}

TEST_CASE("a thread whose request went on after its approvals is not paused") {
  harness h(approval_config());
  pause_with(h, {call("b", "send")});
  CHECK(paused_request(h.history()));
  h.feed(decide("b", verdict::reject));
  CHECK(!paused_request(h.history()));
  h.feed(answer(h.state().call_id.str(), "done"));
  CHECK(!paused_request(h.history()));
  CHECK(interrupted_tool_results(h.history()).empty());
}

TEST_CASE("a paused state survives its JSON form") {
  harness h(approval_config());
  pause_with(h, {call("a", "search"), call("b", "send")});
  auto back = decode_react_state(to_json(h.state()));
  REQUIRE(back.has_value());
  react_state expected = h.state();
  expected.projection = {};
  CHECK(*back == expected);
}

namespace {

// approval_config() with ask_human, a tool a person answers.
react_config question_config() {
  react_config c = approval_config();
  std::vector<tool_spec> tools = *c.tools;
  tool_spec ask = simple_tool("ask_human");
  ask.answered_by_person = true;
  tools.push_back(ask);
  c.tools = make_tool_set(std::move(tools));
  return c;
}

decision answered(std::string tool_call_id, std::string response) {
  decision d = decide(std::move(tool_call_id), verdict::approve);
  d.response = std::move(response);
  return d;
}

}  // namespace

TEST_CASE("a question for a person pauses like an approval and never runs") {
  harness h(question_config());
  const auto out = pause_with(h, {call("q", "ask_human", {{"question", "Which day suits you?"}})});
  CHECK(all_of_type<tool_exec>(out).empty());
  const awaiting_input pause = only<awaiting_input>(out);
  REQUIRE(pause.pending.size() == 1);
  CHECK(pause.pending[0].question);
  CHECK(pause.pending[0].reason == "Which day suits you?");
  CHECK(h.state().status == react_status::awaiting_input);
  CHECK(pending_approvals(h.history(), "r1") == pause.pending);

  SECTION("the response is the call's result, and the model is asked next") {
    const auto next = h.feed(answered("q", "Tuesday"));
    CHECK(only<decision_answer>(next).ok());
    CHECK(all_of_type<tool_exec>(next).empty());
    CHECK(all_of_type<llm_stream>(next).size() == 1);
    CHECK(result_for(h, "q")->outcome_json() == "Tuesday");
    CHECK(find_decision(h.history(), "r1", "q")->payload.at("response") == "Tuesday");
  }
  SECTION("a rejection is the model's to read, as for an approval") {
    decision d = decide("q", verdict::reject);
    d.message = "I'd rather not say";
    h.feed(d);
    CHECK(result_for(h, "q")->outcome_json().at("type") == "rejected");
  }
  SECTION("an edit or a sticky answer is refused as invalid_decision, and the question stays open") {
    decision edit = decide("q", verdict::edit);
    decision sticky = answered("q", "Tuesday");
    sticky.sticky = true;
    for (const decision& d : {edit, sticky}) {
      const decision_answer a = only<decision_answer>(h.feed(d));
      REQUIRE(a.error);
      CHECK(a.error->type == error_type::invalid_decision);
    }
    CHECK(h.state().status == react_status::awaiting_input);
    CHECK(!find_decision(h.history(), "r1", "q"));
  }
  SECTION("a restart finds the question open") {
    const std::optional<react_state> paused = paused_request(thread(h.history().snapshot()));
    REQUIRE(paused);
    REQUIRE(paused->tool_calls.size() == 1);
    CHECK(paused->tool_calls[0].awaiting_until != 0);
    CHECK(!paused->tool_calls[0].outcome);
  }
}

TEST_CASE("a sticky approval lets the tool's later calls on the thread run without asking") {
  harness h(approval_config());
  pause_with(h, {call("b", "send", {{"to", "bob"}})});
  decision d = decide("b", verdict::approve);
  d.sticky = true;
  const tool_exec b = only<tool_exec>(h.feed(d));
  const entry* decided = find_decision(h.history(), "r1", "b");
  REQUIRE(decided);
  CHECK(decided->payload.at("sticky") == true);
  CHECK(decided->payload.at("tool") == "send");
  CHECK(allowed_on_thread(h.history(), "send"));
  CHECK(!allowed_on_thread(h.history(), "wire"));

  const llm_stream next = only<llm_stream>(h.feed(result_of(b, "sent")));
  SECTION("the next call of the same tool runs at once") {
    const auto out = h.feed(wants_tools(next.call_id, {call("c", "send", {{"to", "carol"}})}));
    CHECK(only<tool_exec>(out).tool_call_id == "c");
    CHECK(all_of_type<awaiting_input>(out).empty());
    CHECK(of_kind(h, entry_kind::approval_request).size() == 1);
  }
  SECTION("another supervised tool still asks") {
    const auto out = h.feed(wants_tools(next.call_id, {call("w", "wire", {{"amount", 500}})}));
    CHECK(all_of_type<tool_exec>(out).empty());
    CHECK(only<awaiting_input>(out).pending[0].tool == "wire");
  }
  SECTION("the allowance is read from the thread alone, so it holds after a restart") {
    CHECK(allowed_on_thread(thread(h.history().snapshot()), "send"));
  }
}

TEST_CASE("a sticky rejection is refused as invalid_decision") {
  harness h(approval_config());
  pause_with(h, {call("b", "send")});
  decision d = decide("b", verdict::reject);
  d.sticky = true;
  const decision_answer a = only<decision_answer>(h.feed(d));
  REQUIRE(a.error);
  CHECK(a.error->type == error_type::invalid_decision);
  CHECK(!allowed_on_thread(h.history(), "send"));
}

TEST_CASE("a decision that leaves calls waiting says the pause again, with the calls that still wait") {
  harness h(approval_config());
  pause_with(h, {call("b", "send"), call("c", "send", {{"to", "carol"}})});
  const auto out = h.feed(decide("b", verdict::reject));
  CHECK(only<decision_answer>(out).ok());
  const awaiting_input again = only<awaiting_input>(out);
  REQUIRE(again.pending.size() == 1);
  CHECK(again.pending[0].tool_call_id == "c");
  CHECK(again.pending[0].arguments == json::object{{"to", "carol"}});
  CHECK(again.next_expiry() == of_kind(h, entry_kind::approval_request)[1]->payload.integer("expires_at"));
  SECTION("the last decision ends the pause: no pause is said") {
    CHECK(all_of_type<awaiting_input>(h.feed(decide("c", verdict::reject))).empty());
  }
}

namespace {

// An agent whose tool ask_b asks another agent, b, and so relays b's pauses.
react_config relaying_config() {
  react_config c = config_with_tools({"ask_b"});
  std::vector<tool_spec> tools = *c.tools;
  tools[0].relays_approvals = true;
  c.tools = make_tool_set(std::move(tools));
  return c;
}

// b paused on calls that send to bob (deadline 5000, approved then), as ask_b's result.
tool_result inner_paused(const tool_exec& x, std::vector<std::string> ids = {"s2"}) {
  inner_pause p{"b", "a->b", "rb", {}};
  for (const std::string& id : ids) {
    open_approval a{id, "send", {{"to", "bob"}}, "sends an email", 5'000};
    a.on_expiry = verdict::approve;
    p.pending.push_back(std::move(a));
  }
  return result_of(x, to_tool_result(p));
}

}  // namespace

TEST_CASE("another agent's pause, as a tool's result, pauses the request on calls that point at it") {
  harness h(relaying_config());
  const tool_exec ask = only<tool_exec>(pause_with(h, {call("o1", "ask_b", {{"question", "mail bob"}})}));
  const auto out = h.feed(inner_paused(ask, {"s2", "s3"}));
  const awaiting_input pause = only<awaiting_input>(out);
  REQUIRE(pause.pending.size() == 2);
  CHECK(pause.pending[0].tool_call_id == "o1/s2");
  CHECK(pause.pending[0].inner == inner_approval{"b", "a->b", "rb", "s2"});
  CHECK(pause.pending[0].on_expiry == verdict::approve);
  CHECK(pending_approvals(h.history(), "r1") == pause.pending);
  CHECK(h.state().status == react_status::awaiting_input);
  CHECK(of_kind(h, entry_kind::tool_result).empty());  // the call is open, not finished

  SECTION("a decision is committed here and passed down with the other agent's ids") {
    const auto next = h.feed(decide("o1/s2", verdict::approve));
    CHECK(only<decision_answer>(next).taken);
    const pass_down down = only<pass_down>(next);
    CHECK(down.agent_id == "b");
    CHECK(down.thread_id == "a->b");
    CHECK(down.tool_call_id == "o1");
    const decision& d = std::get<decision>(down.what);
    CHECK(d.request_id == "rb");
    CHECK(d.tool_call_id == "s2");
    CHECK(d.decided_by == "ada");
    REQUIRE(find_decision(h.history(), "r1", "o1/s2"));
    CHECK(relayed_to(*find_decision(h.history(), "r1", "o1/s2"))->inner.request_id == "rb");
    // s3 still waits: the request is still paused, saying so again.
    CHECK(only<awaiting_input>(next).pending.size() == 1);
    SECTION("b pausing still on s3 asks nothing again") {
      CHECK(h.feed(inner_paused(ask, {"s3"})).empty());
      CHECK(of_kind(h, entry_kind::approval_request).size() == 2);
    }
    SECTION("b's answer, once every call is decided, is the call's result") {
      h.feed(decide("o1/s3", verdict::reject));
      CHECK(h.state().status == react_status::awaiting_tools);
      CHECK(all_of_type<llm_stream>(h.feed(result_of(ask, "inner: sent to bob"))).size() == 1);
      CHECK(result_for(h, "o1")->outcome_json() == "inner: sent to bob");
      CHECK(open_approval_requests(h.history()).empty());
    }
  }
  SECTION("a decision for a call b does not list is not_found") {
    const decision_answer a = only<decision_answer>(h.feed(decide("o1/nope", verdict::approve)));
    REQUIRE(a.error);
    CHECK(a.error->type == error_type::not_found);
  }
  SECTION("at the deadline b's default is committed here and passed down, marked expire") {
    h.now = 6'000;
    const auto next = h.feed(approval_tick{"r1"});
    const auto downs = all_of_type<pass_down>(next);
    REQUIRE(downs.size() == 2);
    CHECK(std::get<decision>(downs[0].what).expire);
    CHECK(std::get<decision>(downs[0].what).answer == verdict::approve);
    CHECK(find_decision(h.history(), "r1", "o1/s2")->payload.at("decided_by") == "expiry");
  }
  SECTION("a cancel cancels b's request and answers the call cancelled") {
    const auto next = h.feed(cancel{"r1", "stop"});
    const pass_down down = only<pass_down>(next);
    CHECK(std::get<cancel>(down.what).request_id == "rb");
    CHECK(result_for(h, "o1")->outcome_json().at("type") == "cancelled");
    CHECK(open_approval_requests(h.history()).empty());
  }
  SECTION("a restart rebuilds it paused, and the repair leaves the call alone") {
    thread t(h.history().snapshot());
    CHECK(interrupted_tool_results(t).empty());
    const std::optional<react_state> paused = paused_request(t);
    REQUIRE(paused);
    REQUIRE(paused->tool_calls.size() == 1);
    CHECK(paused->tool_calls[0].awaiting_until == 5'000);
    CHECK(!paused->tool_calls[0].outcome);
  }
}
