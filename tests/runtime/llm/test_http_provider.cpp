// The HTTP model provider against a local server that replays recorded
// streams, cut into chunks, answers with HTTP errors and counts retries.

#include "runtime/llm/http_llm_provider.hpp"
#include "support/http_test_server.hpp"
#include "support/llm_call_probe.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/fixtures.hpp"

#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <stdexcept>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

using call_probe = llm_call_probe;

llm_stream request() {
  llm_stream s;
  s.call_id = "call-1";
  s.model = "test-model";
  s.messages = {llm_message{"user", "hi", {}, {}, {}}};
  return s;
}

http_provider_options options(const http_test_server& server, wire_format f = wire_format::openai) {
  http_provider_options o;
  o.format = f;
  o.base_url = server.base_url() + (f == wire_format::openai ? "/v1" : "");
  o.api_key = "sk-test-secret";
  o.retry = llm_retry_policy{2, 1ms, 5ms};
  o.first_byte_timeout = 5s;
  o.idle_timeout = 5s;
  return o;
}

const error_info& error_of(const llm_result& r) {
  REQUIRE(!r.ok());
  return std::get<error_info>(r.outcome);
}

}  // namespace

TEST_CASE("an OpenAI-compatible stream over HTTP") {
  http_test_server server;
  auto client = std::make_shared<http_client>();
  http_llm_provider provider(options(server), client);

  SECTION("text arrives as deltas and the result carries usage") {
    server.respond(scripted_http_response::sse(fixture("openai_text.sse"), 7));
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    const auto& c = std::get<llm_completion>(p.wait().outcome);
    CHECK(c.text == "Hello, world");
    CHECK(p.text == "Hello, world");
    CHECK(c.usage == token_usage{12, 3});

    const recorded_request req = server.requests().at(0);
    CHECK(req.method == "POST");
    CHECK(req.path == "/v1/chat/completions");
    CHECK(req.header("authorization") == "Bearer sk-test-secret");
    CHECK(req.header("content-type") == "application/json");
    const json::value body = json::parse(req.body);
    CHECK(body.at("model") == "test-model");
    CHECK(body.at("stream") == true);
  }
  SECTION("tool arguments in fragments, in one-byte chunks") {
    server.respond(scripted_http_response::sse(fixture("openai_tool_fragments.sse"), 1));
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    const auto& c = std::get<llm_completion>(p.wait().outcome);
    REQUIRE(c.tool_calls.size() == 1);
    CHECK(c.tool_calls[0].arguments == json::object{{"city", "Lisbon"}, {"unit", "celsius"}});
  }
  SECTION("a stream cut before [DONE] is a malformed response") {
    server.respond(scripted_http_response::sse(fixture("openai_no_done.sse")));
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(error_of(p.wait()).type == "malformed_response");
  }
}

TEST_CASE("failed attempts are typed, retried when it helps, and counted") {
  http_test_server server;
  auto client = std::make_shared<http_client>();
  http_llm_provider provider(options(server), client);
  call_probe p;

  SECTION("401 is not retried, and the key never shows in the error") {
    server.respond(scripted_http_response::json(401, R"({"error":{"message":"Incorrect API key provided"}})"));
    p.handle = provider.stream(request(), p.callbacks());
    const error_info& e = error_of(p.wait());
    CHECK(e.type == "auth");
    CHECK(e.http_status == 401);
    CHECK(e.attempts == 1);
    CHECK(server.request_count() == 1);
    CHECK(e.message.find("sk-test-secret") == std::string::npos);
  }
  SECTION("429 with retry-after is retried and then succeeds") {
    server.respond(scripted_http_response::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "0"}}));
    server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(p.wait().ok());
    CHECK(server.request_count() == 2);
  }
  SECTION("500 until the retries run out") {
    for (int i = 0; i < 3; ++i) server.respond(scripted_http_response::json(500, "oops"));
    p.handle = provider.stream(request(), p.callbacks());
    const error_info& e = error_of(p.wait());
    CHECK(e.type == "server");
    CHECK(e.attempts == 3);
    CHECK(server.request_count() == 3);
  }
  SECTION("529 is overloaded and retried") {
    server.respond(scripted_http_response::json(
        529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
    server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(p.wait().ok());
    CHECK(server.request_count() == 2);
  }
  SECTION("an error inside a stream that already streamed text is not retried") {
    server.respond(scripted_http_response::sse(fixture("openai_error_in_stream.sse")));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(error_of(p.wait()).type == "server");
    CHECK(server.request_count() == 1);
    CHECK(p.text == "Partial");
  }
}

TEST_CASE("the network side of a model call") {
  auto client = std::make_shared<http_client>();

  SECTION("an unreachable server is a network error, retried then reported") {
    int port;
    {
      http_test_server closed;
      port = closed.port();
    }
    http_provider_options o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    o.retry = llm_retry_policy{1, 1ms, 2ms};
    http_llm_provider provider(o, client);
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    const error_info& e = error_of(p.wait());
    CHECK(e.type == "network");
    CHECK(e.attempts == 2);
  }
  SECTION("a stream that stalls hits the idle timeout") {
    http_test_server server;
    auto stalled = scripted_http_response::sse("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n");
    stalled.stall = true;
    server.respond(stalled);
    http_provider_options o = options(server);
    o.idle_timeout = 200ms;
    http_llm_provider provider(o, client);
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    const error_info& e = error_of(p.wait());
    CHECK(e.type == "timeout");
    CHECK(p.text == "hi");
    CHECK(server.request_count() == 1);  // text was streamed: not retried
  }
  SECTION("cancelling aborts the transfer at once and nothing comes after") {
    http_test_server server;
    // One event with text now, the rest ten seconds later.
    auto slow = scripted_http_response::sse("");
    slow.chunks = {"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n", fixture("openai_text.sse")};
    slow.pause = 10s;
    server.respond(slow);
    http_llm_provider provider(options(server), client);
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    REQUIRE(p.wait_for_text());
    const auto before = std::chrono::steady_clock::now();
    p.handle->cancel();
    CHECK(std::chrono::steady_clock::now() - before < 2s);
    std::lock_guard lock(p.m);
    CHECK(!p.result);
  }
}

TEST_CASE("non-streaming calls over HTTP") {
  http_test_server server;
  auto client = std::make_shared<http_client>();

  SECTION("OpenAI") {
    http_provider_options o = options(server);
    o.stream = false;
    http_llm_provider provider(o, client);
    server.respond(scripted_http_response::json(
        200, R"({"choices":[{"index":0,"message":{"role":"assistant","content":"All at once."},"finish_reason":"stop"}],
               "usage":{"prompt_tokens":3,"completion_tokens":4}})"));
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    const auto& c = std::get<llm_completion>(p.wait().outcome);
    CHECK(c.text == "All at once.");
    CHECK(c.usage == token_usage{3, 4});
    CHECK(!json::parse(server.requests().at(0).body).as_object().contains("stream"));
  }
  SECTION("Anthropic") {
    http_provider_options o = options(server, wire_format::anthropic);
    o.stream = false;
    http_llm_provider provider(o, client);
    server.respond(scripted_http_response::json(
        200, R"({"type":"message","content":[{"type":"text","text":"Whole."}],"stop_reason":"end_turn",
               "usage":{"input_tokens":5,"output_tokens":2}})"));
    call_probe p;
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(std::get<llm_completion>(p.wait().outcome).text == "Whole.");
  }
}

TEST_CASE("an Anthropic stream over HTTP") {
  http_test_server server;
  auto client = std::make_shared<http_client>();
  http_llm_provider provider(options(server, wire_format::anthropic), client);
  server.respond(scripted_http_response::sse(fixture("anthropic_tool_use.sse"), 13));
  call_probe p;
  p.handle = provider.stream(request(), p.callbacks());
  const auto& c = std::get<llm_completion>(p.wait().outcome);
  REQUIRE(c.tool_calls.size() == 1);
  CHECK(c.tool_calls[0].name == "weather");

  const recorded_request req = server.requests().at(0);
  CHECK(req.path == "/v1/messages");
  CHECK(req.header("x-api-key") == "sk-test-secret");
  CHECK(req.header("anthropic-version") == "2023-06-01");
  CHECK(req.header("authorization").empty());
  CHECK(json::parse(req.body).at("max_tokens") == 4096);
}

TEST_CASE("a malformed stream fails its call, and the client serves the next one") {
  http_test_server server;
  auto client = std::make_shared<http_client>();
  http_llm_provider provider(options(server), client);
  server.respond(scripted_http_response::sse(fixture("openai_negative_index.sse"), 5));
  server.respond(scripted_http_response::sse(fixture("openai_text.sse")));

  call_probe bad;
  bad.handle = provider.stream(request(), bad.callbacks());
  const error_info& e = error_of(bad.wait());
  CHECK(e.type == "malformed_response");
  CHECK(e.attempts == 1);

  call_probe good;
  good.handle = provider.stream(request(), good.callbacks());
  CHECK(std::get<llm_completion>(good.wait().outcome).text == "Hello, world");
}

TEST_CASE("a callback that throws fails its own transfer, never the I/O thread") {
  http_test_server server;
  http_client client;
  struct outcome {
    std::mutex m;
    std::condition_variable cv;
    std::optional<std::optional<error_info>> done;
    std::optional<error_info> wait() {
      std::unique_lock lock(m);
      REQUIRE(cv.wait_for(lock, 10s, [&] { return done.has_value(); }));
      return *done;
    }
  };
  using body_callback = std::function<std::optional<error_info>(std::string_view)>;
  auto start = [&](outcome& o, body_callback on_body, std::function<void(const http_response_head&)> on_head = {}) {
    http_request r;
    r.url = server.base_url() + "/";
    client.start(r, {std::move(on_head), std::move(on_body), [&o](std::optional<error_info> e) {
                       std::lock_guard lock(o.m);
                       o.done = std::move(e);
                       o.cv.notify_all();
                     }});
  };
  auto served_after = [&] {
    server.respond(scripted_http_response::json(200, "{}"));
    outcome next;
    std::string body;
    start(next, [&](std::string_view b) {
      body += b;
      return std::optional<error_info>{};
    });
    CHECK(!next.wait());
    CHECK(body == "{}");
  };

  SECTION("on_body") {
    server.respond(scripted_http_response::sse(fixture("openai_text.sse"), 16));
    outcome thrown;
    start(thrown, [](std::string_view) -> std::optional<error_info> { throw std::out_of_range("index -1"); });
    const auto e = thrown.wait();
    REQUIRE(e);
    CHECK(e->type == "callback_failed");
    CHECK_THAT(e->message, Catch::Contains("index -1"));
    served_after();
  }
  SECTION("on_head, with something that is not a std::exception") {
    server.respond(scripted_http_response::json(200, "{}"));
    outcome thrown;
    start(thrown, body_callback{}, [](const http_response_head&) { throw 42; });
    const auto e = thrown.wait();
    REQUIRE(e);
    CHECK(e->type == "callback_failed");
    served_after();
  }
  SECTION("on_done") {
    server.respond(scripted_http_response::json(200, "{}"));
    std::promise<void> called;
    http_request r;
    r.url = server.base_url() + "/";
    client.start(r, {{}, {}, [&](std::optional<error_info>) {
                       called.set_value();
                       throw std::runtime_error("after the end");
                     }});
    called.get_future().wait();
    served_after();
  }
}

TEST_CASE("responses larger than the provider's caps fail with response_too_large, unretried") {
  http_test_server server;
  auto client = std::make_shared<http_client>();
  http_provider_options o = options(server);
  o.max_event_bytes = 1024;
  o.max_response_bytes = 64 * 1024;
  call_probe p;

  SECTION("one streamed event past the event cap") {
    http_llm_provider provider(o, client);
    server.respond(scripted_http_response::sse(
        "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(4096, 'a') + "\"}}]}\n\ndata: [DONE]\n\n", 512));
    p.handle = provider.stream(request(), p.callbacks());
    const error_info& e = error_of(p.wait());
    CHECK(e.type == "response_too_large");
    CHECK(e.attempts == 1);
    CHECK(server.request_count() == 1);
  }
  SECTION("a stream of small events past the response cap") {
    http_llm_provider provider(o, client);
    std::string events;
    while (events.size() <= o.max_response_bytes)
      events += "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n";
    server.respond(scripted_http_response::sse(events + "data: [DONE]\n\n", 4096));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(error_of(p.wait()).type == "response_too_large");
  }
  SECTION("a non-streaming body past the response cap") {
    o.stream = false;
    http_llm_provider provider(o, client);
    server.respond(scripted_http_response::json(
        200, R"({"choices":[{"message":{"content":")" + std::string(o.max_response_bytes, 'a') + R"("}}]})"));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(error_of(p.wait()).type == "response_too_large");
    CHECK(server.request_count() == 1);
  }
  SECTION("a body just within the caps is decoded") {
    o.stream = false;
    http_llm_provider provider(o, client);
    server.respond(scripted_http_response::json(
        200, R"({"choices":[{"message":{"content":")" + std::string(60 * 1024, 'a') + R"("}}]})"));
    p.handle = provider.stream(request(), p.callbacks());
    CHECK(std::get<llm_completion>(p.wait().outcome).text.size() == 60 * 1024);
  }
}
