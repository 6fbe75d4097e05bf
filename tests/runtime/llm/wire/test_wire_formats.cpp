// The OpenAI and Anthropic wire formats: request bodies, streamed responses
// (fed whole and in random pieces), non-streaming responses, and the typed
// errors and retry delays of failed calls.

#include "json/utf8.hpp"
#include "runtime/llm/llm_errors.hpp"
#include "runtime/llm/wire/detail/anthropic_format.hpp"
#include "runtime/llm/wire/detail/openai_format.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/fixtures.hpp"

#include <bit>
#include <fstream>
#include <random>
#include <sstream>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

struct decoded_stream {
  llm_result result;
  std::string streamed_text;
  std::string streamed_thinking;
};

// Feeds the bytes through the SSE parser into a decoder, in pieces cut at
// random (or whole, for seed 0).
template <class Decoder>
decoded_stream decode(const std::string& bytes, std::uint32_t seed = 0) {
  decoded_stream out;
  Decoder d("call-1", [&](llm_delta delta) {
    out.streamed_text += delta.text;
    out.streamed_thinking += delta.thinking;
  });
  sse_parser p;
  auto on_event = [&](const sse_event& e) { d.on_event(e); };
  if (seed == 0) {
    p.feed(bytes, on_event);
  } else {
    std::mt19937 rng(seed);
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 9)(rng);
      p.feed(std::string_view(bytes).substr(at, n), on_event);
      at += n;
    }
  }
  out.result = d.finish();
  return out;
}

const llm_completion& completion(const llm_result& r) {
  INFO("result: " << (r.ok() ? "ok"
                             : std::get<error_info>(r.outcome).type + ": " + std::get<error_info>(r.outcome).message));
  REQUIRE(r.ok());
  return std::get<llm_completion>(r.outcome);
}

const error_info& error_of(const llm_result& r) {
  REQUIRE(!r.ok());
  return std::get<error_info>(r.outcome);
}

template <class Decoder>
void check_split_invariance(const std::string& name) {
  const std::string bytes = fixture(name);
  const decoded_stream whole = decode<Decoder>(bytes);
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const decoded_stream split = decode<Decoder>(bytes, seed);
    INFO(name << " seed " << seed);
    CHECK(split.result == whole.result);
    CHECK(split.streamed_text == whole.streamed_text);
  }
}

llm_stream sample_request() {
  llm_stream s;
  s.call_id = "c1";
  s.model = "m";
  s.messages = {llm_message{"system", "Be brief.", {}, {}, {}},
                llm_message{"user", "Weather in Lisbon and Oslo?", {}, {}, {}},
                llm_message{"assistant",
                            "Checking.",
                            {tool_call{"t1", "weather", {{"city", "Lisbon"}}, std::nullopt},
                             tool_call{"t2", "weather", {{"city", "Oslo"}}, std::nullopt}},
                            {},
                            {}},
                llm_message{"tool", "21 C", {}, "t1", "weather"},
                llm_message{"tool", "{\"error\":{\"type\":\"timeout\"}}", {}, "t2", "weather"}};
  s.tools = make_tool_set({tool_spec{"weather", "Weather by city", {{"type", "object"}}}});
  s.params.temperature = 0.2;
  s.params.stop = {"END"};
  return s;
}

}  // namespace

TEST_CASE("OpenAI streams") {
  SECTION("text, finish reason and the usage chunk") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_text.sse"));
    const auto& c = completion(d.result);
    CHECK(c.text == "Hello, world");
    CHECK(d.streamed_text == "Hello, world");
    CHECK(c.finish_reason == "stop");
    CHECK(c.usage == token_usage{12, 3});
    CHECK(c.tool_calls.empty());
    CHECK(c.response_id == "chatcmpl-1");
    CHECK(c.response_model == "gpt-4o-mini");
  }
  SECTION("tool arguments in many fragments, CRLF line ends and comments") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_tool_fragments.sse"));
    const auto& c = completion(d.result);
    REQUIRE(c.tool_calls.size() == 1);
    CHECK(c.tool_calls[0].id == "call_w1");
    CHECK(c.tool_calls[0].name == "weather");
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Lisbon"}, {"unit", "celsius"}});
    CHECK(c.finish_reason == "tool_calls");
    CHECK(c.usage == token_usage{40, 18});
  }
  SECTION("parallel tool calls interleaved by index") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_parallel_tools.sse"));
    const auto& c = completion(d.result);
    REQUIRE(c.tool_calls.size() == 2);
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Oslo"}});
    CHECK(c.tool_calls[1].name == "time");
    CHECK(c.tool_calls[1].arguments == json::object{{"tz", "UTC"}});
    CHECK(!c.usage);  // this server sent no usage
  }
  SECTION("an error object inside a 200 stream ends the call with a typed error") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_error_in_stream.sse"));
    CHECK(error_of(d.result).type == "server");
    CHECK_THAT(error_of(d.result).message, Catch::Contains("server had an error"));
    CHECK(d.streamed_text == "Partial");
  }
  SECTION("a stream that ends without [DONE] is an error, not a success") {
    CHECK(error_of(decode<openai_stream_decoder>(fixture("openai_no_done.sse")).result).type == "malformed_response");
  }
  SECTION("malformed tool-call JSON becomes invalid arguments the model will be told about") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_bad_arguments.sse"));
    const auto& c = completion(d.result);
    REQUIRE(c.tool_calls.size() == 1);
    REQUIRE(c.tool_calls[0].invalid_arguments);
    CHECK_THAT(*c.tool_calls[0].invalid_arguments, Catch::StartsWith("{\"city\": \"Lis"));
  }
  SECTION("unicode escaped (with a surrogate pair) and raw, reasoning, usage with null choices") {
    const auto d = decode<openai_stream_decoder>(fixture("openai_unicode.sse"));
    const auto& c = completion(d.result);
    CHECK(c.text == "caf\xC3\xA9 \xF0\x9F\x98\x80 na\xC3\xAFve \xF0\x9F\x98\x80");
    CHECK(c.thinking == "thinking\xE2\x80\xA6");
    CHECK(d.streamed_thinking == c.thinking);
    CHECK(c.usage == token_usage{5, 4});
  }
  SECTION("tool calls without an index go by their position; id and name come from the first fragment") {
    sse_parser p;
    openai_stream_decoder d("c", nullptr);
    p.feed(
        "data: "
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{"
        "\\\"k\\\":\"}},"
        "{\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: "
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"\",\"function\":{\"name\":\"x-renamed\",\"arguments\":\"1}"
        "\"}}]}}]}\n\n"
        "data: [DONE]\n\n",
        [&](const sse_event& e) { d.on_event(e); });
    const llm_result r = d.finish();
    const auto& c = completion(r);
    REQUIRE(c.tool_calls.size() == 2);
    CHECK(c.tool_calls[0].id == "a");
    CHECK(c.tool_calls[0].name == "x");
    CHECK(c.tool_calls[0].arguments == json::object{{"k", 1}});
    CHECK(c.tool_calls[1].name == "y");
  }
  SECTION("a data line that is not JSON is a malformed response") {
    sse_parser p;
    openai_stream_decoder d("c", nullptr);
    p.feed("data: {not json\n\ndata: [DONE]\n\n", [&](const sse_event& e) { d.on_event(e); });
    CHECK(error_of(d.finish()).type == "malformed_response");
  }
  SECTION("the same result however the bytes are split") {
    for (const char* name : {"openai_text.sse", "openai_tool_fragments.sse", "openai_parallel_tools.sse",
                             "openai_error_in_stream.sse", "openai_unicode.sse"})
      check_split_invariance<openai_stream_decoder>(name);
  }
}

TEST_CASE("Anthropic streams") {
  SECTION("text with pings, a stop reason and cumulative usage") {
    const auto d = decode<anthropic_stream_decoder>(fixture("anthropic_text.sse"));
    const auto& c = completion(d.result);
    CHECK(c.text == "Hello!");
    CHECK(d.streamed_text == "Hello!");
    CHECK(c.finish_reason == "end_turn");
    CHECK(c.usage == token_usage{25, 6});  // the latest cumulative count, not a sum
    CHECK(c.response_id == "msg_1");
    CHECK(c.response_model == "claude-sonnet-4-5");
  }
  SECTION("thinking, text and a tool_use whose input arrives in pieces") {
    const auto d = decode<anthropic_stream_decoder>(fixture("anthropic_tool_use.sse"));
    const auto& c = completion(d.result);
    CHECK(c.thinking == "Need weather.");
    CHECK(c.text == "Checking.");
    REQUIRE(c.tool_calls.size() == 1);
    CHECK(c.tool_calls[0].id == "toolu_1");
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Lisbon"}});
    CHECK(c.finish_reason == "tool_use");
    CHECK(c.usage == token_usage{300, 42});
  }
  SECTION("an overloaded_error event") {
    CHECK(error_of(decode<anthropic_stream_decoder>(fixture("anthropic_overloaded.sse")).result).type == "overloaded");
  }
  SECTION("a stream cut before message_stop is an error") {
    std::string bytes = fixture("anthropic_text.sse");
    bytes.resize(bytes.find("event: message_stop"));
    CHECK(error_of(decode<anthropic_stream_decoder>(bytes).result).type == "malformed_response");
  }
  SECTION("the same result however the bytes are split") {
    for (const char* name : {"anthropic_text.sse", "anthropic_tool_use.sse", "anthropic_overloaded.sse"})
      check_split_invariance<anthropic_stream_decoder>(name);
  }
}

TEST_CASE("non-streaming responses") {
  SECTION("OpenAI") {
    const auto r = decode_openai_response("c", R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant",
        "content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather",
        "arguments":"{\"city\":\"Rome\"}"}}]},"finish_reason":"tool_calls"}],
        "usage":{"prompt_tokens":9,"completion_tokens":7}})");
    const auto& c = completion(r);
    REQUIRE(c.tool_calls.size() == 1);
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Rome"}});
    CHECK(c.usage == token_usage{9, 7});
    CHECK(c.finish_reason == "tool_calls");
    CHECK(c.response_id == "x");
    CHECK(c.response_model.empty());  // not said
  }
  SECTION("Anthropic") {
    const auto r = decode_anthropic_response("c", R"({"id":"msg","type":"message","role":"assistant",
        "content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_9","name":"weather",
        "input":{"city":"Rome"}}],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":11}})");
    const auto& c = completion(r);
    CHECK(c.text == "Let me check.");
    REQUIRE(c.tool_calls.size() == 1);
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Rome"}});
    CHECK(c.usage == token_usage{20, 11});
    CHECK(c.response_id == "msg");
  }
  SECTION("a response id or model that is not a string labels nothing and fails nothing") {
    const auto r = decode_openai_response("c", R"({"id":7,"model":{"x":1},"choices":[{"index":0,
        "message":{"content":"Fine."}}]})");
    CHECK(completion(r).text == "Fine.");
    CHECK(completion(r).response_id.empty());
    CHECK(completion(r).response_model.empty());
  }
  SECTION("OpenAI, a choice of two fields (the message must survive the choice growing)") {
    // Under AddressSanitizer this was a use after free: found by fuzz_responses.
    const auto r = decode_openai_response("c", R"({"choices":[{"index":0,"message":{"content":"Short."}}]})");
    CHECK(completion(r).text == "Short.");
    const auto s = decode_openai_response("c", R"({"choices":[{"index":0,"message":"tolOct_calls"}]})");
    CHECK(error_of(s).type == "malformed_response");
  }
  SECTION("bodies that are not JSON") {
    CHECK(error_of(decode_openai_response("c", "<html>")).type == "malformed_response");
    CHECK(error_of(decode_anthropic_response("c", "")).type == "malformed_response");
  }
}

TEST_CASE("request bodies") {
  const llm_stream s = sample_request();

  SECTION("OpenAI") {
    const json::object b = openai_request_body(s, true);
    CHECK(b.at("model") == "m");
    CHECK(b.at("stream") == true);
    CHECK(b.at("stream_options").at("include_usage") == true);
    const json::array& m = b.at("messages").as_array();
    REQUIRE(m.size() == 5);
    CHECK(m[0].at("role") == "system");
    CHECK(m[2].at("tool_calls").at(1).at("function").at("arguments") == R"({"city":"Oslo"})");
    CHECK(m[3].at("role") == "tool");
    CHECK(m[3].at("tool_call_id") == "t1");
    CHECK(b.at("tools").at(0).at("function").at("name") == "weather");
    CHECK(b.at("temperature") == 0.2);
    CHECK(b.at("stop").at(0) == "END");
    CHECK(!openai_request_body(s, false).contains("stream"));
  }
  SECTION("Anthropic") {
    const json::object b = anthropic_request_body(s, true);
    CHECK(b.at("system") == "Be brief.");
    CHECK(b.at("max_tokens") == 4096);
    const json::array& m = b.at("messages").as_array();
    REQUIRE(m.size() == 3);  // user, assistant with tool_use blocks, one user message of results
    CHECK(m[1].at("content").at(0).at("type") == "text");
    CHECK(m[1].at("content").at(2).at("type") == "tool_use");
    CHECK(m[1].at("content").at(2).at("input").at("city") == "Oslo");
    const json::array& results = m[2].at("content").as_array();
    REQUIRE(results.size() == 2);
    CHECK(results[0].at("tool_use_id") == "t1");
    CHECK(!results[0].as_object().contains("is_error"));
    CHECK(results[1].at("is_error") == true);
    CHECK(b.at("tools").at(0).at("input_schema").at("type") == "object");
    CHECK(b.at("stop_sequences").at(0) == "END");
  }
}

TEST_CASE("HTTP errors are typed from the status and the body") {
  const std::int64_t now = 784'111'777'000;  // Sun, 06 Nov 1994 08:49:37 GMT
  auto type_of = [&](int status, std::string_view body = "") {
    return classify_http_error(status, body, "", now).type;
  };
  CHECK(type_of(401) == "auth");
  CHECK(type_of(403) == "permission");
  CHECK(type_of(404) == "not_found");
  CHECK(type_of(400) == "bad_request");
  CHECK(type_of(429) == "rate_limited");
  CHECK(type_of(500) == "server");
  CHECK(type_of(503) == "server");
  CHECK(type_of(529) == "overloaded");
  CHECK(
      type_of(
          400,
          R"({"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}})") ==
      "context_length_exceeded");
  CHECK(
      type_of(
          400,
          R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})") ==
      "context_length_exceeded");
  CHECK(type_of(500, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})") == "overloaded");

  const error_info e = classify_http_error(401, R"({"error":{"message":"Incorrect API key provided"}})", "", now);
  CHECK(e.message == "Incorrect API key provided");
  CHECK(e.http_status == 401);
  CHECK_THAT(classify_http_error(502, "<html>Bad Gateway</html>", "", now).message, Catch::Contains("Bad Gateway"));

  SECTION("a body that is not UTF-8 is quoted as UTF-8, cut between characters") {
    // A proxy's Latin-1 page, and a body cut inside a character by the quote's limit.
    const std::string latin1 = classify_http_error(503,
                                                   "<p>Service indisponible, r\xE9"
                                                   "essayez</p>",
                                                   "", now)
                                   .message;
    CHECK(is_valid_utf8(latin1));
    CHECK_THAT(latin1, Catch::Contains("r\xEF\xBF\xBD"
                                       "essayez"));
    std::string long_body(199, 'x');
    long_body += "\xE2\x9C\x93 and more";
    const std::string cut = classify_http_error(502, long_body, "", now).message;
    CHECK(is_valid_utf8(cut));
    CHECK_THAT(cut, Catch::EndsWith(std::string(199, 'x') + "\xE2\x80\xA6"));
  }

  SECTION("retry-after in seconds or as an HTTP date") {
    CHECK(classify_http_error(429, "", "20", now).retry_after_seconds == 20.0);
    CHECK(parse_retry_after("1.5", now) == 1.5);
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now) == 30.0);
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:40:00 GMT", now) == 0.0);  // in the past
    CHECK(!parse_retry_after("soon", now));
    CHECK(!parse_retry_after("-3", now));
    CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == now);
  }
  SECTION("an HTTP date in each of the three forms a recipient must accept") {
    CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == now);   // IMF-fixdate
    CHECK(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == now);  // RFC 850
    CHECK(parse_http_date("Sun Nov  6 08:49:37 1994") == now);        // asctime
    CHECK(parse_retry_after("Sunday, 06-Nov-94 08:50:07 GMT", now) == 30.0);
    CHECK(parse_retry_after("Sun Nov  6 08:50:07 1994", now) == 30.0);
  }
  SECTION("text that is no date is no Retry-After") {
    for (const char* bad : {"soon", "Sun", "Nov", "GMT", "tomorrow", "Sun, 06 Nov 1994 25:49:37 GMT", ""}) {
      CHECK(!parse_http_date(bad));
      CHECK(!parse_retry_after(bad, now));
    }
  }
  SECTION("which errors are retried") {
    for (const char* t : {"rate_limited", "overloaded", "server", "network"}) CHECK(is_retryable(t));
    for (const char* t : {"auth", "permission", "bad_request", "context_length_exceeded", "not_found",
                          "malformed_response", "cancelled", "timeout"})
      CHECK(!is_retryable(t));
  }
}

TEST_CASE("retry delays back off with full jitter and honour retry-after") {
  const llm_retry_policy p{5, std::chrono::milliseconds(500), std::chrono::milliseconds(4'000)};
  CHECK(retry_delay(2, p, std::nullopt, 0.999).count() == 499);
  CHECK(retry_delay(3, p, std::nullopt, 0.5).count() == 500);
  CHECK(retry_delay(6, p, std::nullopt, 0.999).count() == 3'996);  // capped at max_backoff
  CHECK(retry_delay(2, p, std::nullopt, 0.0).count() == 0);
  CHECK(retry_delay(2, p, 2.5, 0.1).count() == 2'500);   // the server's word wins
  CHECK(retry_delay(2, p, 60.0, 0.1).count() == 4'000);  // within reason
}

TEST_CASE("fields a model server gets wrong end the call as malformed, and never throw") {
  auto openai_chunk = [](const std::string& data) {
    return decode<openai_stream_decoder>("data: " + data + "\n\ndata: [DONE]\n\n").result;
  };
  auto anthropic_event = [](const std::string& data) {
    return decode<anthropic_stream_decoder>("data: " + data + "\n\ndata: {\"type\":\"message_stop\"}\n\n").result;
  };
  const std::string call = R"({"choices":[{"delta":{"tool_calls":[{"index":INDEX,"function":{"name":"f"}}]}}]})";
  auto with_index = [&](const std::string& index) { return std::string(call).replace(call.find("INDEX"), 5, index); };

  SECTION("an OpenAI tool call with index -1 (the recorded stream)") {
    const auto decoded = decode<openai_stream_decoder>(fixture("openai_negative_index.sse"));
    const auto& e = error_of(decoded.result);
    CHECK(e.type == "malformed_response");
    CHECK_THAT(e.message, Catch::Contains("choices[0].delta.tool_calls[0].index"));
  }
  SECTION("an OpenAI tool call index that is a fraction, 2^63 as a double, or a string") {
    for (const char* index : {"1.5", "9223372036854775808.0", "1e300", "\"0\""}) {
      INFO(index);
      CHECK(error_of(openai_chunk(with_index(index))).type == "malformed_response");
    }
  }
  SECTION("an OpenAI tool call index that is a whole double is still an index") {
    CHECK(completion(openai_chunk(with_index("0.0"))).tool_calls.at(0).name == "f");
  }
  SECTION("negative or absurd OpenAI token counts") {
    CHECK(error_of(openai_chunk(R"({"choices":[],"usage":{"prompt_tokens":-3,"completion_tokens":1}})")).type ==
          "malformed_response");
    CHECK(error_of(openai_chunk(R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1e300}})")).type ==
          "malformed_response");
  }
  SECTION("OpenAI fields of the wrong type") {
    CHECK(error_of(openai_chunk(R"({"choices":[{"delta":{"content":5}}]})")).type == "malformed_response");
    CHECK(error_of(openai_chunk(R"({"choices":{"delta":{}}})")).type == "malformed_response");
    CHECK(error_of(openai_chunk(R"({"choices":[7]})")).type == "malformed_response");
  }
  SECTION("an Anthropic content block index of -1 or 1e300") {
    for (const char* index : {"-1", "1e300"}) {
      INFO(index);
      const std::string start = std::string(R"({"type":"content_block_start","index":)") + index +
                                R"(,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}})";
      CHECK(error_of(anthropic_event(start)).type == "malformed_response");
    }
  }
  SECTION("Anthropic usage counts that do not fit") {
    CHECK(
        error_of(
            anthropic_event(
                R"({"type":"message_start","message":{"usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807}}})"))
            .type == "malformed_response");
    CHECK(error_of(anthropic_event(R"({"type":"message_delta","usage":{"output_tokens":-1}})")).type ==
          "malformed_response");
  }
  SECTION("non-streaming responses with fields of the wrong type") {
    CHECK(error_of(decode_openai_response("c", R"({"choices":[{"message":{"tool_calls":[{"index":-1}]}}]})")).type ==
          "malformed_response");
    CHECK(error_of(decode_anthropic_response("c", R"({"content":[5],"usage":{"input_tokens":1}})")).type ==
          "malformed_response");
    CHECK(error_of(decode_anthropic_response("c", R"({"content":[],"usage":{"input_tokens":1.5e300}})")).type ==
          "malformed_response");
  }
  SECTION("an error body whose fields have the wrong types is still typed by its status") {
    const error_info e = classify_http_error(429, R"({"error":{"message":5,"type":[],"code":-1}})", "", 0);
    CHECK(e.type == "rate_limited");
    CHECK(e.message == "HTTP 429: {\"error\":{\"message\":5,\"type\":[],\"code\":-1}}");
    CHECK(classify_stream_error(json::parse(R"({"message":{},"type":1e300})")).type == "server");
  }
}

TEST_CASE("a tool call's numbers are kept exactly") {
  SECTION("a double Boost.JSON alone would read a unit in the last place off") {
    const tool_call c = assemble_tool_call("call-1", "move", R"({"x": 14.127156320378683})");
    REQUIRE_FALSE(c.invalid_arguments);
    CHECK(std::bit_cast<std::uint64_t>(c.arguments.at("x").as_double()) ==
          std::bit_cast<std::uint64_t>(14.127156320378683));
  }
  SECTION("a number beyond a double's range makes the arguments invalid, saying why") {
    const tool_call c = assemble_tool_call("call-1", "move", R"({"x": 1e400})");
    REQUIRE(c.invalid_arguments);
    CHECK_THAT(*c.invalid_arguments, Catch::Contains("1e400") && Catch::Contains("beyond the range of a double"));
    CHECK(c.arguments.empty());
  }
}
