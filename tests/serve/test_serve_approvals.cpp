// Approvals over HTTP: a turn whose tool needs a person pauses (an
// approval_request event, then the turn ends awaiting_input), GET …/pending
// lists what waits, and POST …/decisions continues it. The model is the
// gate provider: "calc: EXPR" asks the calculator, then answers with its
// result.

#include "support/serve_fixture.hpp"
#include "support/sqlite_file.hpp"

#include "apps/serve/event_position.hpp"
#include "runtime/clock.hpp"

#include <future>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

std::string str(const json::value& v) { return std::string(v.as_string()); }

// A server whose agent "clerk" may use the calculator only with a person's approval.
struct approvals_fixture {
  std::shared_ptr<gate_provider> model = std::make_shared<gate_provider>();
  std::unique_ptr<serve::server> server;

  // `rules`: the clerk's approval settings.
  explicit approvals_fixture(const std::string& store = "memory:", const std::string& limits = "",
                             const std::string& rules = "approvals = [\"calculator\"]\n") {
    const std::string clerk =
        "[[agents]]\nid = \"clerk\"\nmodel = \"openai:test\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
        "tools = [\"calculator\"]\n" +
        rules;
    serve::deployment_options o;
    for (const char* id : {"helper", "strict", "urgent", "tiny", "clerk"}) o.providers[id] = model;
    server = std::make_unique<serve::server>(
        serve::parse_config(serve_config_text(store, clerk, limits), "test.toml", ""), std::move(o));
    server->start();
  }
  http_client client() const { return http_client(server->port()); }
};

const std::string messages = "/v1/conversations/web/c1/messages";

std::string decisions(const std::string& conversation_id) {
  return "/v1/conversations/" + conversation_id + "/decisions";
}

std::string decision_body(const std::string& tool_call_id, const std::string& verdict, json::object more = {}) {
  more["tool_call_id"] = tool_call_id;
  more["verdict"] = verdict;
  return json::serialize(more);
}

std::vector<std::string> names_of(const std::vector<sse_message>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.name);
  return out;
}

// A turn asked to compute 2 + 3, paused on the calculator, read as a stream.
struct paused_turn {
  std::vector<sse_message> events;
  std::string conversation_id, request_id, tool_call_id;
  std::uint64_t pause_id = 0;

  explicit paused_turn(http_client& c, const std::string& content = "calc: 2 + 3") {
    REQUIRE(c.open_stream(messages, message_body("clerk", content), as_user(alice_key)).status == 200);
    events = c.rest_of_stream();
    REQUIRE(names_of(events) == std::vector<std::string>{"conversation", "approval_request", "error"});
    conversation_id = str(events[0].data.at("conversation_id"));
    request_id = str(events[0].data.at("request_id"));
    tool_call_id = str(events[1].data.at("tool_call_id"));
    pause_id = events[2].id;
  }
};

}  // namespace

TEST_CASE("serve: a turn whose tool needs approval pauses, and a decision continues it") {
  approvals_fixture f;
  http_client c = f.client();
  paused_turn p(c);

  SECTION("the stream tells the call that waits, then ends the turn awaiting_input") {
    const json::value& asked = p.events[1].data;
    CHECK(str(asked.at("request_id")) == p.request_id);
    CHECK(asked.at("tool") == "calculator");
    CHECK(asked.at("arguments") == json::object{{"expression", "2 + 3"}});
    CHECK(asked.at("reason") == "needs a person's approval");
    CHECK(asked.at("expires_at").as_int64() > 0);
    const json::value& end = p.events[2].data;
    CHECK(end.at("error").at("type") == "awaiting_input");
    REQUIRE(end.at("pending").as_array().size() == 1);
    CHECK(end.at("pending").at(0) == asked);
    // The request, then the turn's end at the end of its last entry's range.
    CHECK(p.events[1].id < p.pause_id);
    CHECK(serve::seq_of(p.pause_id) == serve::seq_of(p.events[1].id));
    CHECK(serve::offset_of(p.pause_id) == serve::max_offset);
    CHECK(f.model->calls() == 1);
  }
  SECTION("GET …/pending lists it") {
    const http_reply r =
        c.send(http::verb::get, "/v1/conversations/" + p.conversation_id + "/pending", {}, as_user(alice_key));
    REQUIRE(r.status == 200);
    REQUIRE(r.json().at("data").as_array().size() == 1);
    CHECK(r.json().at("data").at(0) == p.events[1].data);
  }
  SECTION("approve, streamed: the decision, the tool's run and the answer, each after the pause") {
    REQUIRE(c.open_stream(decisions(p.conversation_id), decision_body(p.tool_call_id, "approve"), as_user(alice_key))
                .status == 200);
    const auto events = c.rest_of_stream();
    REQUIRE(names_of(events) == std::vector<std::string>{"approval_decision", "tool.started", "tool.finished",
                                                         "message.delta", "message.completed"});
    CHECK(events[0].data.at("verdict") == "approve");
    CHECK(events[0].data.at("decided_by") == "alice");
    CHECK(events[2].data.at("content").at("value") == 5);
    CHECK(events[4].data.at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
    std::uint64_t previous = p.pause_id;
    for (const auto& e : events) {
      CHECK(e.id > previous);
      previous = e.id;
    }
    CHECK(c.send(http::verb::get, "/v1/conversations/" + p.conversation_id + "/pending", {}, as_user(alice_key))
              .json()
              .at("data")
              .as_array()
              .empty());
    SECTION("a reconnect from the pause's last event gets the same events") {
      c.open_stream("/v1/conversations/" + p.conversation_id + "/events?after=" + std::to_string(p.pause_id), "",
                    as_user(alice_key), http::verb::get);
      const auto again = c.rest_of_stream();
      REQUIRE(again.size() == events.size());
      for (std::size_t i = 0; i < again.size(); ++i) CHECK(again[i].id == events[i].id);
    }
    SECTION("a decision on it again is 409 already_decided") {
      const http_reply r = c.send(http::verb::post, decisions(p.conversation_id),
                                  decision_body(p.tool_call_id, "reject"), as_user(alice_key));
      CHECK(r.status == 409);
      CHECK(r.error_type() == "already_decided");
    }
  }
  SECTION("reject, as JSON: the model reads the message as the tool's result") {
    const http_reply r = c.send(http::verb::post, decisions(p.conversation_id),
                                decision_body(p.tool_call_id, "reject", {{"message", "not now"}}), as_user(alice_key));
    REQUIRE(r.status == 200);
    CHECK(str(r.json().at("request_id")) == p.request_id);
    CHECK(r.json().at("answer") == R"(result: {"error":{"type":"rejected","message":"not now"}})");
  }
  SECTION("edit: arguments the tool's schema refuses are 422 and change nothing; others run") {
    const http_reply bad =
        c.send(http::verb::post, decisions(p.conversation_id),
               decision_body(p.tool_call_id, "edit", {{"arguments", {{"expression", 5}}}}), as_user(alice_key));
    CHECK(bad.status == 422);
    CHECK(bad.error_type() == "invalid_arguments");
    const http_reply good =
        c.send(http::verb::post, decisions(p.conversation_id),
               decision_body(p.tool_call_id, "edit", {{"arguments", {{"expression", "4 * 4"}}}}), as_user(alice_key));
    REQUIRE(good.status == 200);
    CHECK(good.json().at("answer") == "result: {\"expression\":\"4 * 4\",\"value\":16}");
  }
  SECTION("Idempotency-Key: a repeat is answered as the first, and the tool runs once") {
    const auto keyed = as_user(alice_key, {{"Idempotency-Key", "d-1"}});
    const http_reply first =
        c.send(http::verb::post, decisions(p.conversation_id), decision_body(p.tool_call_id, "approve"), keyed);
    const http_reply again =
        c.send(http::verb::post, decisions(p.conversation_id), decision_body(p.tool_call_id, "approve"), keyed);
    REQUIRE(first.status == 200);
    CHECK(again.status == 200);
    CHECK(again.json().at("answer") == first.json().at("answer"));
    CHECK(f.model->calls() == 2);
    const http_reply other =
        c.send(http::verb::post, decisions(p.conversation_id), decision_body(p.tool_call_id, "reject"), keyed);
    CHECK(other.status == 422);
    CHECK(other.error_type() == "idempotency_key_reused");
  }
  SECTION("typed refusals: no such call 404, a bad verdict 400, another user's conversation 404") {
    const http_reply none =
        c.send(http::verb::post, decisions(p.conversation_id), decision_body("nope", "approve"), as_user(alice_key));
    CHECK(none.status == 404);
    CHECK(none.error_type() == "not_found");
    const http_reply bad = c.send(http::verb::post, decisions(p.conversation_id),
                                  decision_body(p.tool_call_id, "maybe"), as_user(alice_key));
    CHECK(bad.status == 400);
    CHECK(bad.error_type() == "invalid_field");
    const http_reply bobs = c.send(http::verb::post, decisions(p.conversation_id),
                                   decision_body(p.tool_call_id, "approve"), as_user(bob_key));
    CHECK(bobs.status == 404);
    CHECK(c.send(http::verb::get, "/v1/conversations/" + p.conversation_id + "/pending", {}, as_user(bob_key)).status ==
          404);
    // Nothing was decided: the call still waits.
    CHECK(c.send(http::verb::get, "/v1/conversations/" + p.conversation_id + "/pending", {}, as_user(alice_key))
              .json()
              .at("data")
              .as_array()
              .size() == 1);
  }
  f.server->drain();
}

TEST_CASE("serve: a paused turn answered as JSON is 202 with the calls that wait") {
  approvals_fixture f;
  http_client c = f.client();
  const http_reply r = c.send(http::verb::post, messages, message_body("clerk", "calc: 1 + 1"), as_user(alice_key));
  REQUIRE(r.status == 202);
  CHECK(r.json().at("error").at("type") == "awaiting_input");
  REQUIRE(r.json().at("pending").as_array().size() == 1);
  CHECK(r.json().at("pending").at(0).at("tool") == "calculator");
  f.server->drain();
}

TEST_CASE("serve: a pause outlives the server; after a restart the decision continues it") {
  sqlite_file file("troupe-serve-approvals");
  std::string conversation_id, tool_call_id;
  std::uint64_t pause_id = 0;
  {
    approvals_fixture f("sqlite:" + file.path.string());
    http_client c = f.client();
    paused_turn p(c);
    conversation_id = p.conversation_id;
    tool_call_id = p.tool_call_id;
    pause_id = p.pause_id;
    f.server->drain();
  }
  approvals_fixture f("sqlite:" + file.path.string());
  http_client c = f.client();
  SECTION("the pause told from the store has the ids it had live") {
    c.open_stream("/v1/conversations/" + conversation_id + "/events?after=0", "", as_user(alice_key), http::verb::get);
    const auto events = c.rest_of_stream();
    REQUIRE(names_of(events) == std::vector<std::string>{"conversation", "approval_request", "error"});
    CHECK(events[2].id == pause_id);
  }
  SECTION("the decision continues it") {
    REQUIRE(c.send(http::verb::get, "/v1/conversations/" + conversation_id + "/pending", {}, as_user(alice_key))
                .json()
                .at("data")
                .as_array()
                .size() == 1);
    const http_reply r = c.send(http::verb::post, decisions(conversation_id), decision_body(tool_call_id, "approve"),
                                as_user(alice_key));
    REQUIRE(r.status == 200);
    CHECK(r.json().at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
    CHECK(f.model->calls() == 1);  // the model call that asked for the tool was not made again
  }
  f.server->drain();
}

TEST_CASE("serve: a request a decision continues counts among its user's running turns") {
  approvals_fixture f("memory:", "max_turns_per_user = 1\n");
  http_client c = f.client();
  paused_turn p(c, "calc-hold: 2 + 3");
  // The decision's continuation holds in the model after the tool ran.
  auto decided = std::async(std::launch::async, [&] {
    http_client other = f.client();
    return other.send(http::verb::post, decisions(p.conversation_id), decision_body(p.tool_call_id, "approve"),
                      as_user(alice_key));
  });
  REQUIRE(f.model->wait_held("calc-hold: 2 + 3"));
  // Alice's one turn runs: another message of hers is refused, as beside any running turn.
  const http_reply refused =
      c.send(http::verb::post, "/v1/conversations/web/c2/messages", message_body("helper", "hi"), as_user(alice_key));
  CHECK(refused.status == 429);
  CHECK(refused.error_type() == "too_many_turns");
  REQUIRE(f.model->release("calc-hold: 2 + 3"));
  const http_reply done = decided.get();
  CHECK(done.status == 200);
  CHECK(done.json().at("answer") == "done: calc-hold: 2 + 3");
  // Ended, it no longer counts.
  CHECK(c.send(http::verb::post, "/v1/conversations/web/c2/messages", message_body("helper", "hi"), as_user(alice_key))
            .status == 200);
  f.server->drain();
}

TEST_CASE("serve: /v1/chat/completions answers a paused turn with 409 awaiting_input and where to decide it") {
  approvals_fixture f;
  http_client c = f.client();
  const std::string body = R"({"model":"clerk","user":"u1","messages":[{"role":"user","content":"calc: 2 + 3"}]})";
  SECTION("in a conversation: its id, and the calls that wait; a decision there continues the turn") {
    const http_reply r = c.send(http::verb::post, "/v1/chat/completions", body,
                                as_user(alice_key, {{"X-Troupe-Conversation", "chat-9"}}));
    REQUIRE(r.status == 409);
    const json::value answered = r.json();
    const json::value& e = answered.at("error");
    CHECK(e.at("type") == "conflict_error");
    CHECK(e.at("code") == "awaiting_input");
    REQUIRE(e.at("pending").as_array().size() == 1);
    CHECK(e.at("pending").at(0).at("tool") == "calculator");
    const std::string conversation_id = str(e.at("conversation_id"));
    const http_reply done =
        c.send(http::verb::post, decisions(conversation_id),
               decision_body(str(e.at("pending").at(0).at("tool_call_id")), "approve"), as_user(alice_key));
    REQUIRE(done.status == 200);
    CHECK(done.json().at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
  }
  SECTION("streamed: the stream's error chunk is the same object") {
    REQUIRE(c.open_stream(
                 "/v1/chat/completions",
                 R"({"model":"clerk","user":"u1","stream":true,"messages":[{"role":"user","content":"calc: 2 + 3"}]})",
                 as_user(alice_key, {{"X-Troupe-Conversation", "chat-9"}}))
                .status == 200);
    const auto lines = c.rest_of_stream();
    REQUIRE(!lines.empty());
    CHECK(lines.back().data.at("error").at("code") == "awaiting_input");
    CHECK(lines.back().data.at("error").at("conversation_id").is_string());
  }
  SECTION("without a conversation: no id to decide at, and the message says why") {
    const http_reply r = c.send(http::verb::post, "/v1/chat/completions", body, as_user(alice_key));
    REQUIRE(r.status == 409);
    CHECK(r.json().at("error").at("code") == "awaiting_input");
    CHECK(r.json().at("error").at("conversation_id").is_null());
    CHECK_THAT(str(r.json().at("error").at("message")), Catch::Contains("X-Troupe-Conversation"));
  }
  f.server->drain();
}

TEST_CASE("serve: a decision that comes after the call's deadline is 410 expired, and the default is taken") {
  sqlite_file file("troupe-serve-expired");
  const std::string store = "sqlite:" + file.path.string();
  std::string conversation_id, tool_call_id;
  std::int64_t expires_at = 0;
  {
    approvals_fixture f(store, "", "approvals = [\"calculator\"]\napproval_timeout_seconds = 3\n");
    http_client c = f.client();
    paused_turn p(c);
    conversation_id = p.conversation_id;
    tool_call_id = p.tool_call_id;
    expires_at = p.events[1].data.at("expires_at").as_int64();
    f.server->drain();
  }
  // The server is gone before the deadline, and the deadline passes with
  // none running (the clock is waited for, not an actor).
  REQUIRE(wall_clock_ms() < expires_at);
  while (wall_clock_ms() <= expires_at) std::this_thread::yield();
  // Started again without rules, the clerk keeps no deadline of its own:
  // the decision is the first to find the pause, past its deadline.
  approvals_fixture f(store, "", "");
  http_client c = f.client();
  const http_reply r =
      c.send(http::verb::post, decisions(conversation_id), decision_body(tool_call_id, "approve"), as_user(alice_key));
  CHECK(r.status == 410);
  CHECK(r.error_type() == "expired");
  CHECK(c.send(http::verb::get, "/v1/conversations/" + conversation_id + "/pending", {}, as_user(alice_key))
            .json()
            .at("data")
            .as_array()
            .empty());
  f.server->drain();
}
