// POST /v1/chat/completions through a real socket, with a model that
// records what it was sent: the caller's messages reach the model as the
// conversation, the seeded thread is gone afterwards, and a stored
// conversation keeps its history. (The openai npm client test covers the
// wire shapes; this one what the agent sees.)

#include "apps/serve/server.hpp"

#include "runtime/llm/scripted_provider.hpp"
#include "support/http_client.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <mutex>

using namespace troupe;
using namespace troupe::serve;
namespace json = boost::json;

namespace {

const std::string key = "route-test-key-0123456789";

// What each model call was sent.
struct recorded {
  std::mutex mutex;
  std::vector<llm_stream> calls;

  std::shared_ptr<llm_provider> provider() {
    return std::make_shared<scripted_provider>([this](const llm_stream& s) {
      std::lock_guard lock(mutex);
      calls.push_back(s);
      return scripted_reply::text("Seen " + std::to_string(s.messages.size()) + " messages.", token_usage{9, 3, 0});
    });
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return calls.size();
  }
  llm_stream last() {
    std::lock_guard lock(mutex);
    REQUIRE(!calls.empty());
    return calls.back();
  }
};

struct running_server {
  recorded model;
  std::unique_ptr<server> s;

  explicit running_server(const std::string& store = "memory:") {
    serve_config c = parse_config("listen = \"127.0.0.1:0\"\nstore = \"" + store +
                                      "\"\n"
                                      "[[agents]]\nid = \"helper\"\nprovider = \"scripted\"\nscript = \"" +
                                      std::string(TROUPE_FIXTURES_DIR) +
                                      "/../../examples/scripts/calculator.json\"\n"
                                      "system = \"The agent's own prompt.\"\n"
                                      "[[keys]]\nkey = \"" +
                                      key + "\"\nuser = \"ann\"\n",
                                  "test.toml", ".");
    deployment_options o;
    o.providers["helper"] = model.provider();
    s = std::make_unique<server>(std::move(c), std::move(o));
    s->start();
  }
  ~running_server() { s->drain(); }

  std::pair<unsigned, std::string> get(const std::string& target) {
    const testing::http_reply r = testing::http_client(s->port()).send(testing::http::verb::get, target, "",
                                                                       {{"Authorization", "Bearer " + key}});
    return {r.status, r.body};
  }

  // One request; the status and the body.
  std::pair<unsigned, std::string> post(const std::string& target, const std::string& body,
                                        testing::header_list headers = {}) {
    headers.emplace_back("Authorization", "Bearer " + key);
    const testing::http_reply r =
        testing::http_client(s->port()).send(testing::http::verb::post, target, body, headers);
    return {r.status, r.body};
  }
};

}  // namespace

TEST_CASE("the caller's messages are the conversation the agent sees", "[serve][openai]") {
  running_server srv;
  SECTION("history, tool calls and results, the system prompt and parameters reach the model") {
    const auto [status, body] = srv.post("/v1/chat/completions", R"({"model":"helper","temperature":0.25,
      "messages":[{"role":"system","content":"Be terse."},
        {"role":"user","content":"What is 2+2?"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
          "function":{"name":"calculator","arguments":"{\"expression\":\"2+2\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"4"},
        {"role":"assistant","content":"4."},
        {"role":"user","content":"And doubled?"}]})");
    REQUIRE(status == 200);
    const json::value answer = json::parse(body);
    CHECK(answer.at("choices").at(0).at("message").at("content") == "Seen 6 messages.");
    CHECK(answer.at("usage").at("total_tokens") == 12);

    const llm_stream call = srv.model.last();
    REQUIRE(call.messages.size() == 6);
    CHECK(call.messages[0].role == "system");
    CHECK(call.messages[0].content == "Be terse.");
    CHECK(call.messages[1].role == "user");
    CHECK(call.messages[1].content == "What is 2+2?");
    CHECK(call.messages[2].role == "assistant");
    REQUIRE(call.messages[2].tool_calls.size() == 1);
    CHECK(call.messages[2].tool_calls[0].id == "call_1");
    CHECK(call.messages[2].tool_calls[0].arguments == json::object{{"expression", "2+2"}});
    CHECK(call.messages[3].role == "tool");
    CHECK(call.messages[3].tool_call_id == "call_1");
    CHECK(call.messages[3].content == "4");
    CHECK(call.messages[4].content == "4.");
    CHECK(call.messages[5].content == "And doubled?");
    CHECK(call.params.temperature == 0.25);
  }
  SECTION("without system messages the agent's own prompt stays") {
    REQUIRE(
        srv.post("/v1/chat/completions", R"({"model":"helper","messages":[{"role":"user","content":"hi"}]})").first ==
        200);
    const llm_stream call = srv.model.last();
    REQUIRE(call.messages.size() == 2);
    CHECK(call.messages[0].content == "The agent's own prompt.");
  }
  SECTION("a stateless call leaves no thread in the store") {
    REQUIRE(
        srv.post("/v1/chat/completions", R"({"model":"helper","messages":[{"role":"user","content":"hi"}]})").first ==
        200);
    // Removed before the answer went out.
    CHECK(srv.s->agents().store().threads->list().empty());
  }
  SECTION("a stored conversation keeps its history; only the last message is new") {
    const testing::header_list chat{{"X-Troupe-Conversation", "c1"}};
    REQUIRE(srv.post("/v1/chat/completions",
                     R"({"model":"helper","user":"u1","messages":[{"role":"user","content":"first"}]})", chat)
                .first == 200);
    REQUIRE(srv.post("/v1/chat/completions",
                     R"({"model":"helper","user":"u1","messages":[{"role":"user","content":"ignored"},
                       {"role":"user","content":"second"}]})",
                     chat)
                .first == 200);
    const llm_stream call = srv.model.last();
    REQUIRE(call.messages.size() == 4);  // the agent's prompt, first, its answer, second
    CHECK(call.messages[1].content == "first");
    CHECK(call.messages[3].content == "second");
  }
  SECTION("a user and chat that join to the same text as another pair keep their own history") {
    REQUIRE(srv.post("/v1/chat/completions",
                     R"({"model":"helper","user":"a/b","messages":[{"role":"user","content":"first"}]})",
                     {{"X-Troupe-Conversation", "c"}})
                .first == 200);
    REQUIRE(srv.post("/v1/chat/completions",
                     R"({"model":"helper","user":"a","messages":[{"role":"user","content":"second"}]})",
                     {{"X-Troupe-Conversation", "b/c"}})
                .first == 200);
    const llm_stream call = srv.model.last();
    REQUIRE(call.messages.size() == 2);  // the agent's prompt and second: nothing of the other pair
    CHECK(call.messages[1].content == "second");
  }
  SECTION("X-Troupe-Conversation without user is refused") {
    const auto [status, body] =
        srv.post("/v1/chat/completions", R"({"model":"helper","messages":[{"role":"user","content":"x"}]})",
                 {{"X-Troupe-Conversation", "c1"}});
    CHECK(status == 400);
    CHECK(json::parse(body).at("error").at("param") == "user");
  }
}

TEST_CASE("a repeated Idempotency-Key gets the first answer without a second model call", "[serve][openai]") {
  running_server srv;
  const std::string ask = R"({"model":"helper","user":"u1","messages":[{"role":"user","content":"hi"}]})";
  SECTION("stateless") {
    const testing::header_list key{{"Idempotency-Key", "once-1"}};
    const auto first = srv.post("/v1/chat/completions", ask, key);
    const auto again = srv.post("/v1/chat/completions", ask, key);
    REQUIRE(first.first == 200);
    CHECK(again == first);
    CHECK(srv.model.count() == 1);
    CHECK(srv.s->agents().store().threads->list().empty());
  }
  SECTION("on a stored conversation") {
    const testing::header_list key{{"Idempotency-Key", "once-2"}, {"X-Troupe-Conversation", "c1"}};
    const auto first = srv.post("/v1/chat/completions", ask, key);
    const auto again = srv.post("/v1/chat/completions", ask, key);
    REQUIRE(first.first == 200);
    CHECK(again == first);
    CHECK(srv.model.count() == 1);
  }
  SECTION("on a stored conversation, across a restart") {
    const std::string db = (std::filesystem::temp_directory_path() / "troupe-openai-idem.db").string();
    std::filesystem::remove(db);
    const testing::header_list key{{"Idempotency-Key", "once-6"}, {"X-Troupe-Conversation", "c1"}};
    std::pair<unsigned, std::string> first;
    {
      running_server before("sqlite:" + db);
      first = before.post("/v1/chat/completions", ask, key);
    }
    running_server after("sqlite:" + db);
    const auto again = after.post("/v1/chat/completions", ask, key);
    REQUIRE(first.first == 200);
    REQUIRE(again.first == 200);
    const json::value a = json::parse(first.second), b = json::parse(again.second);
    CHECK(b.at("id") == a.at("id"));
    CHECK(b.at("choices") == a.at("choices"));
    CHECK(after.model.count() == 0);
    std::filesystem::remove(db);
  }
  SECTION("another key is another request") {
    const testing::header_list key{{"Idempotency-Key", "once-3"}};
    REQUIRE(srv.post("/v1/chat/completions", ask, key).first == 200);
    REQUIRE(srv.post("/v1/chat/completions", ask, {{"Idempotency-Key", "once-4"}}).first == 200);
    CHECK(srv.model.count() == 2);
  }
  SECTION("the same key with another question is a 422") {
    const testing::header_list key{{"Idempotency-Key", "once-5"}};
    REQUIRE(srv.post("/v1/chat/completions", ask, key).first == 200);
    const auto [status, body] =
        srv.post("/v1/chat/completions", R"({"model":"helper","messages":[{"role":"user","content":"other"}]})", key);
    CHECK(status == 422);
    CHECK(json::parse(body).at("error").at("code") == "idempotency_key_reused");
    CHECK(srv.model.count() == 1);
  }
}

TEST_CASE("the agents are OpenAI's models", "[serve][openai]") {
  running_server srv;
  SECTION("GET /v1/models lists them") {
    const auto [status, body] = srv.get("/v1/models");
    REQUIRE(status == 200);
    const json::value v = json::parse(body);
    CHECK(v.at("object") == "list");
    REQUIRE(v.at("data").as_array().size() == 1);
    CHECK(v.at("data").at(0).at("id") == "helper");
    CHECK(v.at("data").at(0).at("object") == "model");
    CHECK(v.at("data").at(0).at("owned_by") == "troupe");
  }
  SECTION("GET /v1/models/{model} answers one, or 404 model_not_found") {
    CHECK(json::parse(srv.get("/v1/models/helper").second).at("id") == "helper");
    const auto [status, body] = srv.get("/v1/models/nobody");
    CHECK(status == 404);
    CHECK(json::parse(body).at("error").at("code") == "model_not_found");
  }
}

TEST_CASE("the server's own refusals on the OpenAI routes are in OpenAI's error shape", "[serve][openai]") {
  running_server srv;
  SECTION("a wrong key") {
    const testing::http_reply r = testing::http_client(srv.s->port())
                                      .send(testing::http::verb::post, "/v1/chat/completions",
                                            R"({"model":"helper","messages":[{"role":"user","content":"hi"}]})",
                                            {{"Authorization", "Bearer not-a-key-0123456789"}});
    CHECK(r.status == 401);
    const json::value e = r.json().at("error");
    CHECK(e.at("type") == "invalid_request_error");
    CHECK(e.at("code") == "unauthorized");
    CHECK(e.at("param").is_null());
    CHECK(e.at("message").as_string().find("API key") != json::string::npos);
  }
  SECTION("not on the conversations routes, which keep troupe's") {
    const testing::http_reply r =
        testing::http_client(srv.s->port()).send(testing::http::verb::get, "/v1/conversations");
    CHECK(r.status == 401);
    CHECK(r.error_type() == "unauthorized");
  }
}
