// Traces end to end: a runtime whose telemetry is an OTLP exporter pointed at
// a local collector, asked with a caller's traceparent. The collector must
// receive invoke_agent, chat and execute_tool spans in the GenAI conventions,
// parented under the caller's span; model servers and tools must get the
// traceparent of their own span.

#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/telemetry/otlp_exporter.hpp"
#include "support/otlp_receiver.hpp"
#include "support/runtime_harness.hpp"

#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

const std::string caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string caller_span = "00f067aa0ba902b7";
const std::string caller = "00-" + caller_trace + "-" + caller_span + "-01";

std::shared_ptr<otlp_exporter> exporter_to(const otlp_receiver& collector) {
  otlp_options o;
  o.url = collector.traces_url();
  o.resource = {{"service.name", std::string("troupe-tests")}};
  o.schedule_delay = std::chrono::minutes(1);  // spans leave when the runtime shuts down
  return std::make_shared<otlp_exporter>(o);
}

runtime_options traced(std::shared_ptr<llm_provider> model, std::shared_ptr<telemetry_sink> sink) {
  runtime_options o{.provider = std::move(model), .telemetry = std::move(sink)};
  o.traces_from_environment = false;  // the test's collector only
  return o;
}

std::string str(const json::object& o, const char* key) { return std::string(o.at(key).as_string()); }

std::int64_t int_attribute(const json::object& span, const std::string& key) {
  auto v = otlp_receiver::attribute(span, key);
  REQUIRE(v);
  return std::stoll(std::string(v->at("intValue").as_string()));
}

json::object only(const std::vector<json::object>& spans) {
  REQUIRE(spans.size() == 1);
  return spans.front();
}

}  // namespace

TEST_CASE("a turn with a tool call is traced as invoke_agent with chat and execute_tool children", "[traces]") {
  otlp_receiver collector;
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t1", "add", {{"a", 2}, {"b", 3}})}, token_usage{20, 5}),
                                  scripted_reply::text("5", token_usage{30, 1})});
  runtime rt(traced(model, exporter_to(collector)));
  std::mutex seen_mutex;
  std::string tool_traceparent;
  rt.tools().add(make_tool(
      "add",
      [&](const json::object& args, const tool_context& ctx) {
        std::lock_guard lock(seen_mutex);
        tool_traceparent = ctx.traceparent;
        return json::value(args.at("a").as_int64() + args.at("b").as_int64());
      },
      true, object_schema({{"a", "integer"}, {"b", "integer"}})));
  agent a = rt.spawn_agent({.id = "calc", .model = "m", .tools = {"add"}});
  ask_options o;
  o.thread_id = "th-1";
  o.traceparent = caller;
  CHECK(answer_of(must_reply(a.ask("2+3?", o))) == "5");
  rt.shutdown();  // flushes the exporter

  const json::object request = only(collector.spans_named("invoke_agent calc"));
  const auto chats = collector.spans_named("chat m");
  const json::object tool = only(collector.spans_named("execute_tool add"));
  REQUIRE(chats.size() == 2);

  SECTION("the request's span joins the caller's trace, under the caller's span") {
    CHECK(str(request, "traceId") == caller_trace);
    CHECK(str(request, "parentSpanId") == caller_span);
    CHECK(request.at("kind") == 1);
    CHECK(otlp_receiver::string_attribute(request, "gen_ai.operation.name") == "invoke_agent");
    CHECK(otlp_receiver::string_attribute(request, "gen_ai.agent.name") == "calc");
    CHECK(otlp_receiver::string_attribute(request, "gen_ai.conversation.id") == "th-1");
    CHECK(int_attribute(request, "gen_ai.usage.input_tokens") == 50);
    CHECK(request.at("status").at("code") == 0);
  }
  SECTION("both model calls are chat spans, children of the request's span") {
    for (const auto& chat : chats) {
      CHECK(str(chat, "traceId") == caller_trace);
      CHECK(str(chat, "parentSpanId") == str(request, "spanId"));
      CHECK(chat.at("kind") == 3);
      CHECK(otlp_receiver::string_attribute(chat, "gen_ai.operation.name") == "chat");
      CHECK(otlp_receiver::string_attribute(chat, "gen_ai.request.model") == "m");
      CHECK(otlp_receiver::string_attribute(chat, "gen_ai.provider.name") == "scripted");
      CHECK(otlp_receiver::string_attribute(chat, "gen_ai.conversation.id") == "th-1");
    }
    CHECK(str(chats[0], "spanId") != str(chats[1], "spanId"));
  }
  SECTION("a chat span has the call's usage and finish reason, and the time to its first chunk when it streamed") {
    const auto& first = chats[0];
    const auto& second = chats[1];
    CHECK(int_attribute(first, "gen_ai.usage.input_tokens") == 20);
    CHECK(int_attribute(first, "gen_ai.usage.output_tokens") == 5);
    auto reasons = otlp_receiver::attribute(first, "gen_ai.response.finish_reasons");
    REQUIRE(reasons);
    CHECK(reasons->at("arrayValue").at("values").at(0).at("stringValue") == "tool_calls");
    CHECK(otlp_receiver::attribute(second, "gen_ai.response.time_to_first_chunk"));  // "5" came as a delta
  }
  SECTION("the tool call is an execute_tool span under the request, and the tool saw its traceparent") {
    CHECK(str(tool, "parentSpanId") == str(request, "spanId"));
    CHECK(otlp_receiver::string_attribute(tool, "gen_ai.tool.name") == "add");
    CHECK(otlp_receiver::string_attribute(tool, "gen_ai.tool.call.id") == "t1");
    std::lock_guard lock(seen_mutex);
    CHECK(tool_traceparent == "00-" + caller_trace + "-" + str(tool, "spanId") + "-01");
  }
  SECTION("children lie within the request's time") {
    const auto start = [](const json::object& s) { return std::stoll(str(s, "startTimeUnixNano")); };
    const auto end = [](const json::object& s) { return std::stoll(str(s, "endTimeUnixNano")); };
    for (const auto* child : {&chats[0], &chats[1], &tool}) {
      CHECK(start(*child) >= start(request));
      CHECK(end(*child) <= end(request));
    }
  }
}

TEST_CASE("a failed model call is traced with its error", "[traces]") {
  otlp_receiver collector;
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::failure(error_info::of("server", "the model server failed", 3))});
  runtime rt(traced(model, exporter_to(collector)));
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  const reply r = must_reply(a.ask("hi"));
  REQUIRE_FALSE(r.ok());
  rt.shutdown();

  const json::object chat = only(collector.spans_named("chat m"));
  const json::object request = only(collector.spans_named("invoke_agent a"));
  SECTION("the chat span has error.type and an error status") {
    CHECK(otlp_receiver::string_attribute(chat, "error.type") == "server");
    CHECK(chat.at("status").at("code") == 2);
  }
  SECTION("the request's span failed too, and without a caller it is the root of a new trace") {
    CHECK(otlp_receiver::string_attribute(request, "error.type") == std::get<error_info>(r.outcome).type);
    CHECK(request.at("status").at("code") == 2);
    CHECK_FALSE(request.contains("parentSpanId"));
    CHECK(str(chat, "traceId") == str(request, "traceId"));
    CHECK(str(chat, "parentSpanId") == str(request, "spanId"));
  }
}

TEST_CASE("an agent used as a tool is traced under the tool call that asked it", "[traces]") {
  otlp_receiver collector;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    // The outer agent asks the inner one once, then answers; the inner one answers at once.
    if (s.model == "inner") return scripted_reply::text("inner answer");
    const bool asked = s.messages.size() > 0 && s.messages.back().role == "tool";
    return asked ? scripted_reply::text("done") : scripted_reply::tools({call("c1", "ask_inner", {{"question", "?"}})});
  });
  runtime rt(traced(model, exporter_to(collector)));
  rt.spawn_agent({.id = "inner", .model = "inner"});
  rt.add_agent_tool("ask_inner", "inner", "asks the inner agent");
  agent outer = rt.spawn_agent({.id = "outer", .model = "outer", .tools = {"ask_inner"}});
  CHECK(answer_of(must_reply(outer.ask("go"))) == "done");
  rt.shutdown();

  const json::object tool = only(collector.spans_named("execute_tool ask_inner"));
  const json::object inner = only(collector.spans_named("invoke_agent inner"));
  const json::object outer_span = only(collector.spans_named("invoke_agent outer"));
  CHECK(str(inner, "traceId") == str(outer_span, "traceId"));
  CHECK(str(inner, "parentSpanId") == str(tool, "spanId"));
}

TEST_CASE("model servers get the traceparent of their call's span", "[traces]") {
  http_test_server server;
  const std::string body = R"({"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],)"
                           R"("usage":{"prompt_tokens":5,"completion_tokens":1}})";
  http_provider_options po;
  po.base_url = server.base_url() + "/v1";
  po.stream = false;
  auto model = std::make_shared<http_llm_provider>(po, std::make_shared<http_client>());
  ask_options o;
  o.traceparent = caller;

  SECTION("with spans recorded: the chat span's id, in the caller's trace") {
    server.respond(scripted_http_response::json(200, body));
    otlp_receiver collector;
    runtime rt(traced(model, exporter_to(collector)));
    agent a = rt.spawn_agent({.id = "a", .model = "gpt-test"});
    CHECK(answer_of(must_reply(a.ask("hi", o))) == "hi");
    rt.shutdown();
    const json::object chat = only(collector.spans_named("chat gpt-test"));
    CHECK(otlp_receiver::string_attribute(chat, "gen_ai.provider.name") == "openai");
    REQUIRE(server.request_count() == 1);
    CHECK(server.requests()[0].header("traceparent") == "00-" + caller_trace + "-" + str(chat, "spanId") + "-01");
  }
  SECTION("without an exporter: the caller's context passes through unchanged") {
    server.respond(scripted_http_response::json(200, body));
    runtime rt(traced(model, std::make_shared<recording_sink>()));
    agent a = rt.spawn_agent({.id = "a", .model = "gpt-test"});
    CHECK(answer_of(must_reply(a.ask("hi", o))) == "hi");
    REQUIRE(server.request_count() == 1);
    CHECK(server.requests()[0].header("traceparent") == caller);
  }
  SECTION("without an exporter or a caller's context, no traceparent is sent") {
    server.respond(scripted_http_response::json(200, body));
    runtime rt(traced(model, std::make_shared<recording_sink>()));
    agent a = rt.spawn_agent({.id = "a", .model = "gpt-test"});
    CHECK(answer_of(must_reply(a.ask("hi"))) == "hi");
    REQUIRE(server.request_count() == 1);
    CHECK(server.requests()[0].header("traceparent").empty());
  }
}

TEST_CASE("message content is in spans only when asked for", "[traces]") {
  otlp_receiver collector;
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{scripted_reply::text("the answer")});
  otlp_options oo;
  oo.url = collector.traces_url();
  oo.schedule_delay = std::chrono::minutes(1);
  SECTION("off by default") {
    runtime rt(traced(model, std::make_shared<otlp_exporter>(oo)));
    rt.spawn_agent({.id = "a", .model = "m"}).ask("the question").await(patience);
    rt.shutdown();
    const json::object chat = only(collector.spans_named("chat m"));
    CHECK_FALSE(otlp_receiver::attribute(chat, "gen_ai.input.messages"));
    CHECK_FALSE(otlp_receiver::attribute(chat, "gen_ai.output.messages"));
  }
  SECTION("with capture on, prompts and answers are attached") {
    oo.capture_content = true;
    runtime rt(traced(model, std::make_shared<otlp_exporter>(oo)));
    rt.spawn_agent({.id = "a", .model = "m"}).ask("the question").await(patience);
    rt.shutdown();
    const json::object chat = only(collector.spans_named("chat m"));
    const auto input = json::parse(otlp_receiver::string_attribute(chat, "gen_ai.input.messages"));
    CHECK(input.as_array().back().at("parts").at(0).at("content") == "the question");
    const auto output = json::parse(otlp_receiver::string_attribute(chat, "gen_ai.output.messages"));
    CHECK(output.at(0).at("parts").at(0).at("content") == "the answer");
    const json::object request = only(collector.spans_named("invoke_agent a"));
    CHECK(otlp_receiver::string_attribute(request, "gen_ai.output.messages").find("the answer") != std::string::npos);
  }
}

TEST_CASE("a caller's unsampled trace is passed on but not recorded", "[traces]") {
  otlp_receiver collector;
  auto model = std::make_shared<scripted_provider>(
      std::vector<scripted_reply>{scripted_reply::tools({call("t1", "probe")}), scripted_reply::text("ok")});
  runtime rt(traced(model, exporter_to(collector)));
  std::mutex seen_mutex;
  std::string seen;
  rt.tools().add(make_tool("probe", [&](const json::object&, const tool_context& ctx) {
    std::lock_guard lock(seen_mutex);
    seen = ctx.traceparent;
    return json::value("ok");
  }));
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"probe"}});
  ask_options o;
  o.traceparent = "00-" + caller_trace + "-" + caller_span + "-00";
  CHECK(answer_of(must_reply(a.ask("go", o))) == "ok");
  rt.shutdown();
  CHECK(collector.spans().empty());
  std::lock_guard lock(seen_mutex);
  CHECK(seen == o.traceparent);
}
