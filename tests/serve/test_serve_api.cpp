// The conversations API end to end, through real sockets: answers as JSON
// and as event streams, the conversation routes, and who may see what.

#include "support/serve_fixture.hpp"

#include "apps/serve/event_position.hpp"

using namespace troupe::testing;
namespace json = boost::json;

namespace {

const std::string messages_c1 = "/v1/conversations/web/c1/messages";

std::string str(const json::value& v) { return std::string(v.as_string()); }

}  // namespace

TEST_CASE("serve: a message to an agent") {
  serve_fixture f;
  http_client c = f.client();

  SECTION("is answered as one JSON object when no stream is asked for") {
    const http_reply r = c.send(http::verb::post, messages_c1, message_body("helper", "hi"), as_user(alice_key));
    REQUIRE(r.status == 200);
    const json::value v = r.json();
    CHECK(v.at("answer") == "echo: hi");
    CHECK(v.at("usage").at("input_tokens") == 5);
    CHECK(v.at("usage").at("output_tokens") == 2);
    CHECK(v.at("entries_appended") == 2);
    CHECK(str(v.at("conversation_id")).rfind("conv_", 0) == 0);
    CHECK_FALSE(str(v.at("thread_id")).empty());
    CHECK_FALSE(str(v.at("request_id")).empty());
  }
  SECTION("is streamed as events, the conversation first and the completion last, ids placed in the thread") {
    const http_reply head = c.open_stream(messages_c1, message_body("helper", "hi"), as_user(alice_key));
    CHECK(head.status == 200);
    CHECK(head.header("content-type") == "text/event-stream");
    const auto events = c.rest_of_stream();
    REQUIRE(events.size() == 3);
    CHECK(events[0].name == "conversation");
    CHECK(events[0].data.as_object().contains("conversation_id"));
    CHECK(events[1].name == "message.delta");
    CHECK(events[1].data.at("text") == "echo: hi");
    CHECK(events[2].name == "message.completed");
    CHECK(events[2].data.at("answer") == "echo: hi");
    CHECK(events[2].data.at("entries_appended") == 2);
    // The conversation event has no id; the delta's is its 8 bytes after the
    // question (seq 0), the completion's at the answer (seq 1).
    CHECK(events[0].id == 0);
    CHECK(events[1].id == troupe::serve::event_id(0, 8));
    CHECK(events[2].id == troupe::serve::event_id(1, 0));
  }
  SECTION("streams the tool calls it makes") {
    c.open_stream(messages_c1, message_body("helper", "calc: 6 * 7"), as_user(alice_key));
    const auto events = c.rest_of_stream();
    REQUIRE(events.size() >= 4);
    CHECK(events[1].name == "tool.started");
    CHECK(events[1].data.at("name") == "calculator");
    CHECK(events[1].data.at("arguments").at("expression") == "6 * 7");
    CHECK(events[2].name == "tool.finished");
    CHECK(events[2].data.at("ok") == true);
    CHECK(events[2].data.at("content").at("value") == 42);
    CHECK(events.back().name == "message.completed");
    CHECK(events.back().data.at("entries_appended") == 4);
  }
  SECTION("continues the same conversation on the same chat, over one keep-alive connection") {
    const json::value a =
        c.send(http::verb::post, messages_c1, message_body("helper", "one"), as_user(alice_key)).json();
    c.open_stream(messages_c1, message_body("helper", "two"), as_user(alice_key));
    const auto events = c.rest_of_stream();
    const json::value b =
        c.send(http::verb::post, messages_c1, message_body("helper", "three"), as_user(alice_key)).json();
    CHECK(events.front().data.at("conversation_id") == a.at("conversation_id"));
    CHECK(b.at("conversation_id") == a.at("conversation_id"));
    CHECK(b.at("thread_id") == a.at("thread_id"));
    const json::value conv =
        c.send(http::verb::get, "/v1/conversations/" + str(a.at("conversation_id")) + "?messages=10", "",
               as_user(alice_key))
            .json();
    CHECK(conv.at("messages").as_array().size() == 6);
    CHECK(conv.at("messages").at(5).at("content") == "echo: three");
  }
  SECTION("binds the conversation to its agent: another agent on it is a 409") {
    c.send(http::verb::post, messages_c1, message_body("helper", "hi"), as_user(alice_key));
    const http_reply r = c.send(http::verb::post, messages_c1, message_body("strict", "hi"), as_user(alice_key));
    CHECK(r.status == 409);
    CHECK(r.error_type() == "agent_mismatch");
    const json::value list = c.send(http::verb::get, "/v1/conversations", "", as_user(alice_key)).json();
    CHECK(list.at("data").at(0).at("metadata").at("agent") == "helper");
  }
  SECTION("on another chat or from another user is another conversation") {
    const json::value a = c.send(http::verb::post, messages_c1, message_body("helper", "x"), as_user(alice_key)).json();
    const json::value b =
        c.send(http::verb::post, "/v1/conversations/web/c2/messages", message_body("helper", "x"), as_user(alice_key))
            .json();
    const json::value d = c.send(http::verb::post, messages_c1, message_body("helper", "x"), as_user(bob_key)).json();
    CHECK(a.at("conversation_id") != b.at("conversation_id"));
    CHECK(a.at("conversation_id") != d.at("conversation_id"));
  }
}

TEST_CASE("serve: bad messages") {
  serve_fixture f;
  http_client c = f.client();
  SECTION("malformed JSON is a 400") {
    const http_reply r = c.send(http::verb::post, messages_c1, "{\"agent\":", as_user(alice_key));
    CHECK(r.status == 400);
    CHECK(r.error_type() == "invalid_json");
  }
  SECTION("a missing field is a 400 naming it") {
    http_reply r = c.send(http::verb::post, messages_c1, "{\"content\":\"hi\"}", as_user(alice_key));
    CHECK(r.status == 400);
    CHECK(r.error_type() == "missing_field");
    CHECK_THAT(r.body, Catch::Contains("agent is required"));
    r = c.send(http::verb::post, messages_c1, "{\"agent\":\"helper\",\"content\":7}", as_user(alice_key));
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains("content is required"));
  }
  SECTION("an unknown agent is a 404") {
    const http_reply r = c.send(http::verb::post, messages_c1, message_body("nobody", "hi"), as_user(alice_key));
    CHECK(r.status == 404);
    CHECK(r.error_type() == "unknown_agent");
  }
  SECTION("an unknown route is a 404 and a known path with another method a 405") {
    CHECK(c.send(http::verb::get, "/v1/nothing", "", as_user(alice_key)).status == 404);
    CHECK(c.send(http::verb::put, "/v1/conversations", "", as_user(alice_key)).status == 405);
  }
  SECTION("a bad query parameter is a 400 naming it") {
    const http_reply r = c.send(http::verb::get, "/v1/conversations?limit=lots", "", as_user(alice_key));
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains("limit must be an integer"));
  }
}

TEST_CASE("serve: keys and users") {
  serve_fixture f;
  http_client c = f.client();
  const json::value mine =
      c.send(http::verb::post, messages_c1, message_body("helper", "secret plans"), as_user(alice_key)).json();
  const std::string id = str(mine.at("conversation_id"));

  SECTION("every API route needs a valid key; health does not") {
    for (const auto& [method, target] :
         std::vector<std::pair<http::verb, std::string>>{{http::verb::get, "/v1/agents"},
                                                         {http::verb::get, "/v1/conversations"},
                                                         {http::verb::get, "/v1/conversations/" + id},
                                                         {http::verb::post, messages_c1}}) {
      // A refused request's body is left unread, so each goes on a connection of its own.
      const http_reply none = f.client().send(method, target, message_body("helper", "x"));
      CHECK(none.status == 401);
      CHECK(none.header("www-authenticate") == "Bearer");
      CHECK(f.client().send(method, target, message_body("helper", "x"), as_user("sk-test-alice-012345678X")).status ==
            401);
    }
    CHECK(c.send(http::verb::get, "/healthz").status == 200);
    CHECK(c.send(http::verb::get, "/readyz").status == 200);
  }
  SECTION("another user's conversation is not found, whatever the route") {
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id, "", as_user(bob_key)).status == 404);
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id + "/trace", "", as_user(bob_key)).status == 404);
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id + "/events", "", as_user(bob_key)).status == 404);
    CHECK(c.send(http::verb::post, "/v1/conversations/" + id + "/archive", "", as_user(bob_key)).status == 404);
    CHECK(c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":0}", as_user(bob_key)).status ==
          404);
    CHECK(c.send(http::verb::delete_, "/v1/conversations/" + id, "", as_user(bob_key)).status == 404);
    const http_reply r = c.send(http::verb::get, "/v1/conversations/" + id, "", as_user(bob_key));
    CHECK_THAT(r.body, !Catch::Contains("secret"));
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id, "", as_user(alice_key)).status == 200);
  }
  SECTION("a user lists only their own conversations") {
    c.send(http::verb::post, messages_c1, message_body("helper", "bob's"), as_user(bob_key));
    const json::value alice = c.send(http::verb::get, "/v1/conversations", "", as_user(alice_key)).json();
    const json::value bob = c.send(http::verb::get, "/v1/conversations", "", as_user(bob_key)).json();
    REQUIRE(alice.at("data").as_array().size() == 1);
    CHECK(str(alice.at("data").at(0).at("id")) == id);
    REQUIRE(bob.at("data").as_array().size() == 1);
    CHECK(str(bob.at("data").at(0).at("id")) != id);
  }
}

TEST_CASE("serve: the conversation routes") {
  serve_fixture f;
  http_client c = f.client();
  const auto alice = as_user(alice_key);
  c.send(http::verb::post, messages_c1, message_body("helper", "first"), alice);
  const json::value second = c.send(http::verb::post, messages_c1, message_body("helper", "second"), alice).json();
  const std::string id = str(second.at("conversation_id"));

  SECTION("GET /v1/agents lists the agents with their model and tools") {
    const json::value v = c.send(http::verb::get, "/v1/agents", "", alice).json();
    REQUIRE(v.at("data").as_array().size() == 4);
    CHECK(v.at("data").at(0).at("id") == "helper");
    CHECK(v.at("data").at(0).at("model") == "test");
    CHECK(v.at("data").at(0).at("tools").is_array());
  }
  SECTION("list pages the caller's conversations, newest activity first") {
    c.send(http::verb::post, "/v1/conversations/web/c2/messages", message_body("helper", "other"), alice);
    json::value v = c.send(http::verb::get, "/v1/conversations?limit=1", "", alice).json();
    REQUIRE(v.at("data").as_array().size() == 1);
    CHECK(v.at("data").at(0).at("platform_identifier") == "c2");
    v = c.send(http::verb::get, "/v1/conversations?limit=1&offset=1", "", alice).json();
    CHECK(str(v.at("data").at(0).at("id")) == id);
    CHECK(v.at("data").at(0).at("title") == "first");
  }
  SECTION("get returns the conversation with its last N messages") {
    const json::value v = c.send(http::verb::get, "/v1/conversations/" + id + "?messages=2", "", alice).json();
    CHECK(str(v.at("id")) == id);
    CHECK(v.at("platform") == "web");
    const auto& messages = v.at("messages").as_array();
    REQUIRE(messages.size() == 2);
    CHECK(messages[0].at("role") == "user");
    CHECK(messages[0].at("content") == "second");
    CHECK(messages[1].at("role") == "assistant");
    CHECK(messages[1].at("seq") == 3);
  }
  SECTION("trace returns every entry with totals") {
    const json::value v = c.send(http::verb::get, "/v1/conversations/" + id + "/trace", "", alice).json();
    CHECK(v.at("entries").as_array().size() == 4);
    CHECK(v.at("totals").at("user_messages") == 2);
    CHECK(str(v.at("conversation").at("id")) == id);
  }
  SECTION("archive keeps it readable and the chat's next message opens a new conversation") {
    const http_reply r = c.send(http::verb::post, "/v1/conversations/" + id + "/archive", "", alice);
    CHECK(r.status == 200);
    CHECK(r.json().at("archived") == true);
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id, "", alice).status == 200);
    const json::value next = c.send(http::verb::post, messages_c1, message_body("helper", "again"), alice).json();
    CHECK(str(next.at("conversation_id")) != id);
  }
  SECTION("delete removes it and its thread") {
    const http_reply r = c.send(http::verb::delete_, "/v1/conversations/" + id, "", alice);
    CHECK(r.status == 200);
    CHECK(c.send(http::verb::get, "/v1/conversations/" + id, "", alice).status == 404);
    CHECK(c.send(http::verb::get, "/v1/conversations", "", alice).json().at("data").as_array().empty());
  }
  SECTION("fork makes a new conversation holding the entries up to at_seq, which can be continued") {
    const http_reply r = c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":1}", alice);
    REQUIRE(r.status == 201);
    const json::value fork = r.json();
    CHECK(str(fork.at("id")) != id);
    CHECK(str(fork.at("forked_from").at("conversation_id")) == id);
    const std::string fork_id = str(fork.at("id"));
    const json::value trace = c.send(http::verb::get, "/v1/conversations/" + fork_id + "/trace", "", alice).json();
    CHECK(trace.at("entries").as_array().size() == 2);
    const std::string chat = str(fork.at("platform_identifier"));
    const json::value more = c.send(http::verb::post, "/v1/conversations/web/" + chat + "/messages",
                                    message_body("helper", "from the fork"), alice)
                                 .json();
    CHECK(str(more.at("conversation_id")) == fork_id);
    CHECK(more.at("entries_appended") == 2);
  }
  SECTION("a fork repeated with its Idempotency-Key answers with the first fork, made once") {
    const auto keyed = as_user(alice_key, {{"Idempotency-Key", "fork-once"}});
    const http_reply first = c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":1}", keyed);
    const http_reply again = c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":1}", keyed);
    REQUIRE(first.status == 201);
    CHECK(again.status == 201);
    CHECK(again.json() == first.json());
    CHECK(c.send(http::verb::get, "/v1/conversations", "", alice).json().at("data").as_array().size() == 2);
  }
  SECTION("a fork's Idempotency-Key used again for another fork point is a 422") {
    const auto keyed = as_user(alice_key, {{"Idempotency-Key", "fork-once"}});
    REQUIRE(c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":1}", keyed).status == 201);
    const http_reply r = c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":0}", keyed);
    CHECK(r.status == 422);
    CHECK(r.error_type() == "idempotency_key_reused");
  }
  SECTION("fork without at_seq, or past the end, is a 400") {
    CHECK(c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{}", alice).status == 400);
    CHECK(c.send(http::verb::post, "/v1/conversations/" + id + "/fork", "{\"at_seq\":99}", alice).status == 400);
  }
}

TEST_CASE("serve: text that is not UTF-8 is refused, not stored") {
  serve_fixture f;
  const auto alice = as_user(alice_key);
  const auto listed = [&] {
    const http_reply r = f.client().send(http::verb::get, "/v1/conversations", "", alice);
    REQUIRE(r.status == 200);
    return r.json().at("data").as_array().size();  // throws if the list is not JSON
  };
  SECTION("a chat id with bytes that are not UTF-8 is a 400 naming the path segment") {
    const http_reply r =
        f.client().send(http::verb::post, "/v1/conversations/web/%FF%FE/messages", message_body("helper", "hi"), alice);
    CHECK(r.status == 400);
    CHECK(r.error_type() == "invalid_utf8");
    CHECK(str(r.json().at("error").at("message")) == "path segment 4 is not valid UTF-8");
    CHECK(listed() == 0);
  }
  SECTION("an X-Troupe-Conversation header that is not UTF-8 is a 400 naming the header") {
    const http_reply r = f.client().send(http::verb::post, "/v1/chat/completions",
                                         R"({"model":"helper","user":"u","messages":[{"role":"user","content":"hi"}]})",
                                         as_user(alice_key, {{"X-Troupe-Conversation", "\xFF\xFE"}}));
    CHECK(r.status == 400);
    CHECK(r.json().at("error").at("code") == "invalid_utf8");  // OpenAI's shape on OpenAI's route
    CHECK(str(r.json().at("error").at("message")).find("X-Troupe-Conversation") != std::string::npos);
    CHECK(listed() == 0);
  }
  SECTION("a query parameter that is not UTF-8 is a 400") {
    const http_reply r = f.client().send(http::verb::get, "/v1/conversations?limit=%C0%AF", "", alice);
    CHECK(r.status == 400);
    CHECK(r.error_type() == "invalid_utf8");
  }
  SECTION("UTF-8 text passes") {
    const http_reply r = f.client().send(http::verb::post, "/v1/conversations/web/%C3%A9t%C3%A9/messages",
                                         message_body("helper", "hi"), alice);
    CHECK(r.status == 200);
    CHECK(listed() == 1);
  }
}

TEST_CASE("serve: /metrics is read with a metrics key only") {
  serve_fixture f;
  http_client c = f.client();
  SECTION("a user's key is refused") {
    const http_reply r = c.send(http::verb::get, "/metrics", "", as_user(alice_key));
    CHECK(r.status == 403);
    CHECK(r.error_type() == "forbidden");
  }
  SECTION("the metrics key reads it") {
    const http_reply r = c.send(http::verb::get, "/metrics", "", as_user(metrics_key));
    CHECK(r.status == 200);
    CHECK_THAT(r.body, Catch::Contains("# TYPE"));
  }
  SECTION("the metrics key reads nothing else") {
    const http_reply r = c.send(http::verb::get, "/v1/conversations", "", as_user(metrics_key));
    CHECK(r.status == 403);
    CHECK(r.error_type() == "forbidden");
  }
}

TEST_CASE("serve: listen takes a host name") {
  troupe::serve::serve_config c = troupe::serve::parse_config(serve_config_text("memory:"), "test.toml", "");
  troupe::serve::set_listen(c, "localhost:0");
  troupe::serve::deployment_options o;
  auto model = std::make_shared<gate_provider>();
  for (const char* id : {"helper", "strict", "urgent", "tiny"}) o.providers[id] = model;
  troupe::serve::server s(std::move(c), std::move(o));
  s.start();
  http_client client(s.port());
  CHECK(client.send(http::verb::get, "/healthz").status == 200);
}

TEST_CASE("serve: an agent's tool that no one provides is refused at start, naming the field") {
  std::string text = serve_config_text("memory:");
  const std::string tools = "tools = [\"calculator\"]";
  REQUIRE(text.find(tools) != std::string::npos);
  text.replace(text.find(tools), tools.size(), "tools = [\"calculator\", \"x\"]");
  troupe::serve::deployment_options o;
  o.providers["helper"] = std::make_shared<gate_provider>();
  CHECK_THROWS_WITH(troupe::serve::server(troupe::serve::parse_config(text, "test.toml", ""), std::move(o)),
                    Catch::Contains("agents[0].tools[1]: no tool named \"x\""));
}
