#include "apps/serve/openai_chat.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::serve;
namespace json = boost::json;

namespace {

chat_request parsed(std::string_view body) {
  auto r = parse_chat_request(body);
  if (auto* e = std::get_if<openai_error>(&r)) FAIL("refused: " << e->message);
  return std::get<chat_request>(r);
}

openai_error refused(std::string_view body) {
  auto r = parse_chat_request(body);
  REQUIRE(std::holds_alternative<openai_error>(r));
  return std::get<openai_error>(r);
}

chat_turn turn_of(std::string_view body) {
  auto t = to_turn(parsed(body));
  if (auto* e = std::get_if<openai_error>(&t)) FAIL("refused: " << e->message);
  return std::get<chat_turn>(t);
}

openai_error turn_refused(std::string_view body) {
  auto t = to_turn(parsed(body));
  REQUIRE(std::holds_alternative<openai_error>(t));
  return std::get<openai_error>(t);
}

}  // namespace

TEST_CASE("a chat completion request is read into its fields", "[serve][openai]") {
  SECTION("model, messages, stream and the usage option") {
    const chat_request r = parsed(R"({"model":"helper","messages":[{"role":"user","content":"hi"}],
      "stream":true,"stream_options":{"include_usage":true},"user":"ann"})");
    CHECK(r.model == "helper");
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].role == "user");
    CHECK(r.messages[0].content == "hi");
    CHECK(r.stream);
    CHECK(r.include_usage);
    CHECK(r.user == "ann");
  }
  SECTION("not streaming unless asked") {
    const chat_request r = parsed(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
    CHECK_FALSE(r.stream);
    CHECK_FALSE(r.include_usage);
  }
  SECTION("sampling parameters; max_completion_tokens wins over max_tokens") {
    const chat_request r = parsed(R"({"model":"m","messages":[{"role":"user","content":"hi"}],
      "max_tokens":10,"max_completion_tokens":20,"temperature":0.5,"top_p":0.9,"stop":["x","y"]})");
    CHECK(r.params.max_tokens == 20);
    CHECK(r.params.temperature == 0.5);
    CHECK(r.params.top_p == 0.9);
    CHECK(r.params.stop == std::vector<std::string>{"x", "y"});
  }
  SECTION("a single stop string") {
    CHECK(parsed(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"END"})").params.stop ==
          std::vector<std::string>{"END"});
  }
  SECTION("content as text parts is joined") {
    const chat_request r = parsed(R"({"model":"m","messages":[{"role":"user","content":
      [{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
    CHECK(r.messages[0].content == "ab");
  }
  SECTION("an assistant message with only tool calls") {
    const chat_request r = parsed(R"({"model":"m","messages":[
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"calculator","arguments":"{\"expression\":\"1+1\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"2"},
      {"role":"user","content":"and?"}]})");
    REQUIRE(r.messages[0].tool_calls.size() == 1);
    CHECK(r.messages[0].tool_calls[0] == chat_tool_call{"c1", "calculator", R"({"expression":"1+1"})"});
    CHECK(r.messages[1].tool_call_id == "c1");
  }
}

TEST_CASE("a bad chat completion request is refused with the field named", "[serve][openai]") {
  SECTION("a body that is not JSON") {
    const openai_error e = refused("{nope");
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.message.find("not valid JSON") != std::string::npos);
  }
  SECTION("a body that is not an object") { CHECK(refused("[1]").message == "the body must be a JSON object"); }
  SECTION("no model") {
    const openai_error e = refused(R"({"messages":[{"role":"user","content":"hi"}]})");
    CHECK(e.param == "model");
    CHECK(e.message == "model: is required");
  }
  SECTION("no messages") { CHECK(refused(R"({"model":"m","messages":[]})").param == "messages"); }
  SECTION("an unknown role") {
    const openai_error e =
        refused(R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]})");
    CHECK(e.param == "messages");
    CHECK(e.message.starts_with("messages[1].role: expected one of"));
  }
  SECTION("a user message without content") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"user"}]})").message.starts_with("messages[0].content"));
  }
  SECTION("an image part") {
    const openai_error e =
        refused(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})");
    CHECK(e.message.starts_with("messages[0].content[0].type: only \"text\" parts"));
  }
  SECTION("a tool message without its call id") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"tool","content":"2"}]})").message ==
          "messages[0].tool_call_id: is required");
  }
  SECTION("stream that is not a boolean") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"user","content":"a"}],"stream":"yes"})").param == "stream");
  }
  SECTION("a temperature out of range") {
    const openai_error e = refused(R"({"model":"m","messages":[{"role":"user","content":"a"}],"temperature":3})");
    CHECK(e.param == "temperature");
    CHECK(e.message == "temperature: expected a number from 0.0 to 2.0");
  }
  SECTION("max_tokens of zero") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":0})").param == "max_tokens");
  }
  SECTION("more than one choice") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"user","content":"a"}],"n":2})").param == "n");
  }
  SECTION("caller-defined tools") {
    CHECK(refused(R"({"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]})").param ==
          "tools");
  }
  SECTION("an empty tools list is accepted") {
    CHECK(parsed(R"({"model":"m","messages":[{"role":"user","content":"a"}],"tools":[]})").model == "m");
  }
}

TEST_CASE("the caller's messages become a fresh thread's entries and a question", "[serve][openai]") {
  SECTION("one user message: no history, the question") {
    const chat_turn t = turn_of(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
    CHECK(t.history.empty());
    CHECK(t.question == "hi");
    CHECK_FALSE(t.system_prompt);
  }
  SECTION("system and developer messages become the system prompt") {
    const chat_turn t = turn_of(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},
      {"role":"developer","content":"Use French."},{"role":"user","content":"hi"}]})");
    CHECK(t.system_prompt == "Be brief.\n\nUse French.");
    CHECK(t.history.empty());
  }
  SECTION("earlier turns become messages, tool calls and tool results") {
    const chat_turn t = turn_of(R"({"model":"m","messages":[
      {"role":"user","content":"what is 1+1?"},
      {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"calculator","arguments":"{\"expression\":\"1+1\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"2"},
      {"role":"assistant","content":"2"},
      {"role":"user","content":"and 2+2?"}]})");
    REQUIRE(t.history.size() == 5);
    CHECK(t.history[0] == entry_draft{"message", {{"role", "user"}, {"content", "what is 1+1?"}}, {}});
    CHECK(t.history[1].kind == "message");
    CHECK(t.history[1].payload.at("role") == "assistant");
    CHECK(t.history[2] == entry_draft{"tool_call",
                                      {{"name", "calculator"}, {"arguments", json::object{{"expression", "1+1"}}}},
                                      {{"call_id", t.history[1].refs.at("call_id")}, {"tool_call_id", "c1"}}});
    CHECK(t.history[3] ==
          entry_draft{"tool_result", {{"name", "calculator"}, {"result", "2"}}, {{"tool_call_id", "c1"}}});
    CHECK(t.history[4].payload.at("content") == "2");
    CHECK(t.question == "and 2+2?");
  }
}

TEST_CASE("messages that cannot form a turn are refused", "[serve][openai]") {
  SECTION("the last message is not the user's") {
    const openai_error e =
        turn_refused(R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]})");
    CHECK(e.status == 400);
    CHECK(e.message == "messages[1].role: the last message must be the user's");
  }
  SECTION("a tool message that answers no call") {
    CHECK(turn_refused(R"({"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":"2"},
      {"role":"user","content":"a"}]})")
              .message.starts_with("messages[0].tool_call_id: \"x\" answers no tool call"));
  }
  SECTION("a tool call left without its result") {
    CHECK(turn_refused(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1",
      "function":{"name":"t","arguments":"{}"}}]},{"role":"user","content":"a"}]})")
              .message.starts_with("messages[0].tool_calls: the call \"c1\" has no tool message"));
  }
  SECTION("tool call arguments that are not a JSON object") {
    CHECK(turn_refused(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1",
      "function":{"name":"t","arguments":"[1]"}}]},{"role":"tool","tool_call_id":"c1","content":"x"},
      {"role":"user","content":"a"}]})")
              .message == "messages[0].tool_calls[0].function.arguments: expected the text of a JSON object");
  }
  SECTION("two tool calls with one id: one result cannot answer both") {
    const openai_error e = turn_refused(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[
      {"id":"c1","function":{"name":"f","arguments":"{}"}},{"id":"c1","function":{"name":"g","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"a"}]})");
    CHECK(e.param == "messages");
    CHECK(e.message == "messages[0].tool_calls[1].id: \"c1\" is the id of an earlier call of this message");
  }
}

TEST_CASE("answers are written in OpenAI's shapes", "[serve][openai]") {
  const completion_header h{"chatcmpl-r1", 1700000000, "helper"};
  const token_usage usage{12, 5, 0};
  SECTION("a completion carries the answer and the usage") {
    const json::value v = json::parse(completion_json(h, "Hello", usage));
    CHECK(v.at("id") == "chatcmpl-r1");
    CHECK(v.at("object") == "chat.completion");
    CHECK(v.at("created") == 1700000000);
    CHECK(v.at("model") == "helper");
    const json::value& choice = v.at("choices").at(0);
    CHECK(choice.at("message").at("role") == "assistant");
    CHECK(choice.at("message").at("content") == "Hello");
    CHECK(choice.at("finish_reason") == "stop");
    CHECK(v.at("usage") == json::parse(R"({"prompt_tokens":12,"completion_tokens":5,"total_tokens":17})"));
  }
  SECTION("chunks: the role first, then content, then the finish") {
    const json::value role = json::parse(role_chunk_json(h, false));
    CHECK(role.at("object") == "chat.completion.chunk");
    CHECK(role.at("choices").at(0).at("delta").at("role") == "assistant");
    CHECK(role.at("choices").at(0).at("finish_reason").is_null());
    CHECK_FALSE(role.as_object().contains("usage"));
    const json::value text = json::parse(content_chunk_json(h, "Hel", false));
    CHECK(text.at("choices").at(0).at("delta") == json::parse(R"({"content":"Hel"})"));
    const json::value done = json::parse(finish_chunk_json(h, false));
    CHECK(done.at("choices").at(0).at("delta").as_object().empty());
    CHECK(done.at("choices").at(0).at("finish_reason") == "stop");
  }
  SECTION("with include_usage, chunks say usage null and a last chunk carries it") {
    CHECK(json::parse(content_chunk_json(h, "x", true)).at("usage").is_null());
    const json::value u = json::parse(usage_chunk_json(h, usage));
    CHECK(u.at("choices").as_array().empty());
    CHECK(u.at("usage").at("total_tokens") == 17);
  }
  SECTION("an error object names its field, or null") {
    CHECK(
        json::parse(to_json_text(invalid_request("model", "model: is required"))) ==
        json::parse(
            R"({"error":{"message":"model: is required","type":"invalid_request_error","param":"model","code":null}})"));
  }
}

TEST_CASE("a failed turn answers with the status its error calls for", "[serve][openai]") {
  SECTION("a full queue is 429") { CHECK(turn_error("queue_full", "m").status == 429); }
  SECTION("a deadline is 504") { CHECK(turn_error("deadline_exceeded", "m").status == 504); }
  SECTION("a model's failure is 502 and keeps troupe's type as the code") {
    const openai_error e = turn_error("rate_limited", "the model said no");
    CHECK(e.status == 502);
    CHECK(e.code == "rate_limited");
    CHECK(e.message == "the model said no");
  }
}

TEST_CASE("a caller's user and chat name one stored conversation each", "[serve][openai]") {
  SECTION("a slash in the user or in the chat does not make two pairs meet") {
    CHECK(conversation_identifier("a/b", "c") != conversation_identifier("a", "b/c"));
    CHECK(conversation_identifier("a%2Fb", "c") != conversation_identifier("a/b", "c"));
  }
  SECTION("a pair without slashes or percent signs keeps the plain USER/CHAT form") {
    CHECK(conversation_identifier("alice", "chat-1") == "alice/chat-1");
  }
}

TEST_CASE("parameters troupe cannot honour are refused, their neutral values accepted", "[serve][openai]") {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"hi"}],)";
  SECTION("each refused field is named") {
    for (const auto& [field, value] :
         std::vector<std::pair<std::string, std::string>>{{"response_format", R"({"type":"json_object"})"},
                                                          {"logprobs", "true"},
                                                          {"top_logprobs", "2"},
                                                          {"seed", "7"},
                                                          {"tool_choice", R"("required")"},
                                                          {"presence_penalty", "0.5"},
                                                          {"frequency_penalty", "-1"},
                                                          {"logit_bias", R"({"50256":-100})"}}) {
      const openai_error e = refused(head + "\"" + field + "\":" + value + "}");
      CHECK(e.status == 400);
      CHECK(e.type == "invalid_request_error");
      CHECK(e.param == field);
    }
  }
  SECTION("the values clients send by default pass") {
    parsed(head + R"("response_format":{"type":"text"},"logprobs":false,"seed":null,"tool_choice":"auto",
                    "presence_penalty":0,"frequency_penalty":0,"logit_bias":{}})");
  }
}
