// Telemetry events as spans in the GenAI semantic conventions.

#include "runtime/telemetry/detail/genai_spans.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

namespace {

const span_context request_span{0x4bf92f3577b34da6, 0xa3ce929d0e0e4736, 0x1111, 1};

telemetry_event ended(telemetry_kind k) {
  telemetry_event e{k, "helper", "helper:default", "req-1", "call-1", "tc-1", 2, 1'500, {}};
  e.span = request_span;
  e.end_unix_ns = 1'700'000'000'000'000'000;
  e.provider = "openai";
  e.model = "gpt-test";
  return e;
}

std::string text(const span& s, const char* key) {
  const auto* v = s.attribute(key);
  return v ? std::get<std::string>(*v) : std::string("<absent>");
}

}  // namespace

TEST_CASE("a request becomes an invoke_agent span", "[telemetry][genai_spans]") {
  SECTION("named after the agent, with the thread as the conversation, timed by its duration") {
    auto e = ended(telemetry_kind::request_completed);
    e.parent_span_id = 0x2222;
    e.usage = token_usage{10, 4, 0};
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(s->name == "invoke_agent helper");
    CHECK(s->kind == span_kind::internal);
    CHECK(s->parent_span_id == 0x2222);
    CHECK(s->end_unix_ns - s->start_unix_ns == 1'500'000);
    CHECK(text(*s, "gen_ai.operation.name") == "invoke_agent");
    CHECK(text(*s, "gen_ai.agent.name") == "helper");
    CHECK(text(*s, "gen_ai.conversation.id") == "helper:default");
    CHECK(text(*s, "gen_ai.provider.name") == "openai");
    CHECK(std::get<std::int64_t>(*s->attribute("gen_ai.usage.input_tokens")) == 10);
    CHECK(s->status == span_status::unset);
  }
  SECTION("a failed request has an error status and error.type") {
    auto e = ended(telemetry_kind::request_failed);
    e.error_type = "rate_limited";
    e.detail = "rate_limited: slow down";
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(s->status == span_status::error);
    CHECK(s->status_message == "rate_limited: slow down");
    CHECK(text(*s, "error.type") == "rate_limited");
  }
  SECTION("a request some of whose calls' tokens are unknown reports no token counts, not a short sum") {
    auto e = ended(telemetry_kind::request_failed);
    e.error_type = "server";
    e.usage = token_usage{0, 0, 1};  // its one model call failed
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(s->attribute("gen_ai.usage.input_tokens") == nullptr);
    CHECK(s->attribute("gen_ai.usage.output_tokens") == nullptr);
  }
  SECTION("a paused request is not an error: it says it paused") {
    auto s = genai_span(ended(telemetry_kind::request_paused));
    REQUIRE(s);
    CHECK(s->status == span_status::unset);
    CHECK(s->attribute("error.type") == nullptr);
    CHECK(std::get<bool>(*s->attribute("troupe.request.paused")));
  }
  SECTION("a cancelled request is not an error") {
    auto s = genai_span(ended(telemetry_kind::request_cancelled));
    REQUIRE(s);
    CHECK(s->status == span_status::unset);
    CHECK(s->attribute("error.type") == nullptr);
  }
}

TEST_CASE("a model call becomes a chat span", "[telemetry][genai_spans]") {
  SECTION("with model, provider, usage, finish reason and time to first chunk") {
    auto e = ended(telemetry_kind::llm_completed);
    e.usage = token_usage{120, 30, 0};
    e.finish_reason = "tool_calls";
    e.first_chunk_us = 250'000;
    e.response_model = "gpt-test-2026-01-01";
    e.response_id = "chatcmpl-9";
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(s->name == "chat gpt-test");
    CHECK(s->kind == span_kind::client);
    CHECK(text(*s, "gen_ai.operation.name") == "chat");
    CHECK(text(*s, "gen_ai.request.model") == "gpt-test");
    CHECK(text(*s, "gen_ai.provider.name") == "openai");
    CHECK(std::get<std::int64_t>(*s->attribute("gen_ai.usage.output_tokens")) == 30);
    CHECK(std::get<std::vector<std::string>>(*s->attribute("gen_ai.response.finish_reasons")) ==
          std::vector<std::string>{"tool_calls"});
    CHECK(std::get<double>(*s->attribute("gen_ai.response.time_to_first_chunk")) == Approx(0.25));
    CHECK(text(*s, "gen_ai.response.model") == "gpt-test-2026-01-01");
    CHECK(text(*s, "gen_ai.response.id") == "chatcmpl-9");
  }
  SECTION("without usage or a first chunk, those attributes are left out") {
    auto s = genai_span(ended(telemetry_kind::llm_completed));
    REQUIRE(s);
    CHECK(s->attribute("gen_ai.usage.input_tokens") == nullptr);
    CHECK(s->attribute("gen_ai.response.time_to_first_chunk") == nullptr);
    CHECK(s->attribute("gen_ai.response.model") == nullptr);
    CHECK(s->attribute("gen_ai.response.id") == nullptr);
  }
  SECTION("a failed call has error.type and an error status") {
    auto e = ended(telemetry_kind::llm_error);
    e.error_type = e.detail = "server";
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(text(*s, "error.type") == "server");
    CHECK(s->status == span_status::error);
  }
}

TEST_CASE("a tool call becomes an execute_tool span", "[telemetry][genai_spans]") {
  SECTION("named after the tool, with its call id") {
    auto e = ended(telemetry_kind::tool_completed);
    e.detail = "calculator";
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(s->name == "execute_tool calculator");
    CHECK(text(*s, "gen_ai.tool.name") == "calculator");
    CHECK(text(*s, "gen_ai.tool.call.id") == "tc-1");
    CHECK(s->status == span_status::unset);
  }
  SECTION("a failed tool has error.type") {
    auto e = ended(telemetry_kind::tool_error);
    e.detail = "calculator";
    e.error_type = "invalid_arguments";
    auto s = genai_span(e);
    REQUIRE(s);
    CHECK(text(*s, "error.type") == "invalid_arguments");
    CHECK(s->status == span_status::error);
  }
}

TEST_CASE("only span-ending events with span ids become spans", "[telemetry][genai_spans]") {
  SECTION("starts, deltas and other events do not") {
    CHECK_FALSE(genai_span(ended(telemetry_kind::request_started)));
    CHECK_FALSE(genai_span(ended(telemetry_kind::llm_delta)));
    CHECK_FALSE(ends_span(telemetry_kind::agent_crashed));
  }
  SECTION("an event without span ids does not") {
    auto e = ended(telemetry_kind::request_completed);
    e.span = {};
    CHECK_FALSE(genai_span(e));
  }
  SECTION("message content is attached only when the event carries it") {
    auto e = ended(telemetry_kind::llm_completed);
    CHECK(genai_span(e)->attribute("gen_ai.output.messages") == nullptr);
    e.output_messages = R"([{"role":"assistant","parts":[{"type":"text","content":"hi"}]}])";
    CHECK(text(*genai_span(e), "gen_ai.output.messages") == e.output_messages);
  }
}

TEST_CASE("a tool call's wait for a person becomes an await_approval span", "[telemetry][genai_spans]") {
  auto e = ended(telemetry_kind::approval_decided);
  e.detail = "send_email";
  e.verdict = "reject";
  e.decided_by = "ada";
  auto s = genai_span(e);
  REQUIRE(s);
  CHECK(s->name == "await_approval send_email");
  CHECK(s->kind == span_kind::internal);
  CHECK(s->end_unix_ns - s->start_unix_ns == 1'500'000);
  CHECK(text(*s, "gen_ai.tool.name") == "send_email");
  CHECK(text(*s, "gen_ai.tool.call.id") == "tc-1");
  CHECK(text(*s, "troupe.request.id") == "req-1");
  CHECK(text(*s, "troupe.approval.verdict") == "reject");
  CHECK(text(*s, "troupe.approval.decided_by") == "ada");
  CHECK(std::get<bool>(*s->attribute("troupe.approval.expired")) == false);
  // A rejection is a person's answer, not a failure of the span.
  CHECK(s->status == span_status::unset);
}
