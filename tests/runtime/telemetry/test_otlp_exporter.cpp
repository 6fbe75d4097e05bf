// The OTLP/HTTP exporter against a local collector: what it sends, how it
// is configured from the environment, and that a slow or absent collector
// costs the emitting side nothing but dropped spans.

#include "runtime/telemetry/otlp_exporter.hpp"
#include "support/otlp_receiver.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

telemetry_event tool_done(int n) {
  telemetry_event e{telemetry_kind::tool_completed, "a", "a:default", "req",       "call",
                    "tc-" + std::to_string(n),      1,   10,          "calculator"};
  e.span = {1, 2, static_cast<std::uint64_t>(n + 1), 1};
  e.parent_span_id = 7;
  e.end_unix_ns = 1'700'000'000'000'000'000;
  return e;
}

otlp_options local(const std::string& url) {
  otlp_options o;
  o.url = url;
  o.headers = {{"x-api-key", "secret"}};
  o.resource = {{"service.name", std::string("tests")}};
  o.schedule_delay = 60s;  // only full batches and flushes send
  o.export_timeout = 5s;
  o.shutdown_timeout = 2s;
  return o;
}

env_reader env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("the exporter posts spans to the collector", "[telemetry][otlp_exporter]") {
  otlp_receiver collector;
  otlp_exporter exporter(local(collector.traces_url()));

  SECTION("flush sends what is queued as JSON to /v1/traces, with the configured headers") {
    exporter.emit(tool_done(1));
    exporter.emit(tool_done(2));
    exporter.flush(10s);
    REQUIRE(collector.server().request_count() == 1);
    const auto r = collector.server().requests().front();
    CHECK(r.method == "POST");
    CHECK(r.path == "/v1/traces");
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("x-api-key") == "secret");
    const auto spans = collector.spans();
    REQUIRE(spans.size() == 2);
    CHECK(spans[0].at("name") == "execute_tool calculator");
    CHECK(spans[0].at("parentSpanId") == "0000000000000007");
    CHECK(exporter.stats().exported == 2);
  }
  SECTION("a full batch is sent without waiting for the schedule") {
    otlp_options o = local(collector.traces_url());
    o.max_batch = 3;
    otlp_exporter batched(o);
    for (int i = 0; i < 3; ++i) batched.emit(tool_done(i));
    CHECK(collector.server().wait_for_requests(1, 10s));
  }
  SECTION("only span-ending events with span ids are taken") {
    CHECK(exporter.wants(telemetry_kind::request_completed));
    CHECK_FALSE(exporter.wants(telemetry_kind::llm_delta));
    CHECK_FALSE(exporter.wants(telemetry_kind::request_started));
    telemetry_event untraced = tool_done(1);
    untraced.span = {};
    exporter.emit(untraced);
    exporter.flush(10s);
    CHECK(collector.server().request_count() == 0);
  }
  SECTION("what is still queued is sent when the exporter is destroyed") {
    {
      otlp_exporter last(local(collector.traces_url()));
      last.emit(tool_done(1));
    }
    CHECK(collector.spans().size() == 1);
  }
}

TEST_CASE("a slow or absent collector never blocks emit", "[telemetry][otlp_exporter]") {
  SECTION("a collector that does not answer: the queue fills, the rest is dropped and counted") {
    otlp_receiver collector;
    collector.server().respond(scripted_http_response::never());
    otlp_options o = local(collector.traces_url());
    o.max_queue = 4;
    o.max_batch = 1;
    o.export_timeout = 3s;
    o.shutdown_timeout = 100ms;
    otlp_exporter exporter(o);
    exporter.emit(tool_done(0));
    REQUIRE(collector.server().wait_for_requests(1, 10s));  // the worker now waits on the hung export
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i <= 1000; ++i) exporter.emit(tool_done(i));
    CHECK(std::chrono::steady_clock::now() - start < 1s);
    CHECK(exporter.stats().dropped >= 996);
  }
  SECTION("a collector that never answers: once a flush found it stuck, the end does not wait for it again") {
    otlp_receiver collector;
    collector.server().respond_always(scripted_http_response::never());
    otlp_options o = local(collector.traces_url());
    o.max_batch = 1;
    o.export_timeout = 60s;
    o.shutdown_timeout = 30s;  // what the end would wait without the stuck flush
    auto exporter = std::make_unique<otlp_exporter>(o);
    exporter->emit(tool_done(0));
    REQUIRE(collector.server().wait_for_requests(1, 10s));
    exporter->emit(tool_done(1));
    exporter->flush(100ms);  // runs out of time: the export in flight hangs
    const auto start = std::chrono::steady_clock::now();
    exporter.reset();
    CHECK(std::chrono::steady_clock::now() - start < 10s);
  }
  SECTION("a collector that is down: the batch fails and is counted") {
    otlp_options o = local("http://127.0.0.1:1/v1/traces");
    otlp_exporter exporter(o);
    exporter.emit(tool_done(1));
    exporter.flush(10s);
    CHECK(exporter.stats().failed == 1);
    CHECK(exporter.stats().exported == 0);
  }
  SECTION("a collector that refuses the batch: counted as failed") {
    otlp_receiver collector;
    collector.server().respond(scripted_http_response::json(400, R"({"message":"bad"})"));
    otlp_exporter exporter(local(collector.traces_url()));
    exporter.emit(tool_done(1));
    exporter.flush(10s);
    CHECK(exporter.stats().failed == 1);
  }
}

TEST_CASE("the exporter is configured from the standard OTEL_ variables", "[telemetry][otlp_exporter]") {
  SECTION("without an endpoint there is no exporter") { CHECK_FALSE(otlp_options_from_env(env_of({}))); }
  SECTION("the general endpoint gets /v1/traces appended; the traces endpoint is used as is") {
    CHECK(otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}}))->url ==
          "http://c:4318/v1/traces");
    CHECK(otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"}}))->url ==
          "http://c:4318/v1/traces");
    CHECK(otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                                        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/custom"}}))
              ->url == "http://t:9/custom");
  }
  SECTION("OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off") {
    CHECK_FALSE(otlp_options_from_env(
        env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "TRUE"}})));
    CHECK_FALSE(otlp_options_from_env(
        env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_TRACES_EXPORTER", "none"}})));
    CHECK(otlp_options_from_env(
        env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "false"}})));
  }
  SECTION("headers are key=value pairs, percent-decoded; the traces ones win") {
    auto o = otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"},
                                           {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Basic%20abc, x-a = 1,bad"},
                                           {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2"}}));
    REQUIRE(o);
    using header = std::pair<std::string, std::string>;
    CHECK(o->headers == std::vector<header>{{"Authorization", "Basic abc"}, {"x-a", "2"}});
  }
  SECTION("the service name, resource attributes, batching and content capture") {
    auto o = otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"},
                                           {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test"},
                                           {"OTEL_SERVICE_NAME", "bot"},
                                           {"OTEL_BSP_SCHEDULE_DELAY", "250"},
                                           {"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
                                           {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "500"},
                                           {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"},
                                           {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only"}}));
    REQUIRE(o);
    CHECK(o->resource == std::vector<span_attribute>{{"deployment.environment", std::string("test")},
                                                     {"service.name", std::string("bot")}});
    CHECK(o->schedule_delay == 250ms);
    CHECK(o->max_queue == 100);
    CHECK(o->max_batch == 100);  // never more than the queue holds
    CHECK(o->export_timeout == 3s);
    CHECK(o->capture_content);
  }
  SECTION("by default the service is troupe and content is not captured") {
    auto o = otlp_options_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"}}));
    REQUIRE(o);
    CHECK(o->resource == std::vector<span_attribute>{{"service.name", std::string("troupe")}});
    CHECK_FALSE(o->capture_content);
  }
}
