// The OTLP/HTTP JSON body: field names and the encodings collectors expect.

#include "runtime/telemetry/otlp_json.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {

span sample_span() {
  span s;
  s.context = {0x4bf92f3577b34da6, 0xa3ce929d0e0e4736, 0x00f067aa0ba902b7, 1};
  s.parent_span_id = 0x0102030405060708;
  s.name = "chat m";
  s.kind = span_kind::client;
  s.start_unix_ns = 1'700'000'000'123'456'789;
  s.end_unix_ns = 1'700'000'001'000'000'000;
  s.attributes = {{"s", std::string("text")},
                  {"i", std::int64_t{9'007'199'254'740'993}},
                  {"d", 0.25},
                  {"b", true},
                  {"a", std::vector<std::string>{"stop", "length"}}};
  s.status = span_status::error;
  s.status_message = "server";
  return s;
}

json::object only_span(const std::string& body) {
  const auto v = json::parse(body);
  return v.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).as_object();
}

}  // namespace

TEST_CASE("spans are encoded as an OTLP ExportTraceServiceRequest in JSON", "[telemetry][otlp_json]") {
  const otlp_resource resource{{{"service.name", std::string("svc")}}, "troupe", ""};

  SECTION("resource, scope and spans nest as resourceSpans → scopeSpans → spans") {
    const auto v = json::parse(otlp_traces_json(resource, {sample_span()}));
    const auto& rs = v.at("resourceSpans").at(0);
    CHECK(rs.at("resource").at("attributes").at(0).at("key") == "service.name");
    CHECK(rs.at("resource").at("attributes").at(0).at("value").at("stringValue") == "svc");
    CHECK(rs.at("scopeSpans").at(0).at("scope").at("name") == "troupe");
    CHECK(rs.at("scopeSpans").at(0).at("spans").as_array().size() == 1);
  }
  SECTION("ids are lower-case hex, times and kind as the encoding wants") {
    const auto s = only_span(otlp_traces_json(resource, {sample_span()}));
    CHECK(s.at("traceId") == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(s.at("spanId") == "00f067aa0ba902b7");
    CHECK(s.at("parentSpanId") == "0102030405060708");
    CHECK(s.at("startTimeUnixNano") == "1700000000123456789");  // strings: 64-bit
    CHECK(s.at("endTimeUnixNano") == "1700000001000000000");
    CHECK(s.at("kind") == 3);
    CHECK(s.at("name") == "chat m");
  }
  SECTION("attribute values carry their type: string, int (as a string), double, bool, array") {
    const auto a = only_span(otlp_traces_json(resource, {sample_span()})).at("attributes").as_array();
    CHECK(a.at(0).at("value").at("stringValue") == "text");
    CHECK(a.at(1).at("value").at("intValue") == "9007199254740993");
    CHECK(a.at(2).at("value").at("doubleValue").as_double() == 0.25);
    CHECK(a.at(3).at("value").at("boolValue") == true);
    const auto& values = a.at(4).at("value").at("arrayValue").at("values").as_array();
    CHECK(values.size() == 2);
    CHECK(values.at(1).at("stringValue") == "length");
  }
  SECTION("the status has its numeric code, and a message for errors") {
    const auto s = only_span(otlp_traces_json(resource, {sample_span()}));
    CHECK(s.at("status").at("code") == 2);
    CHECK(s.at("status").at("message") == "server");
  }
  SECTION("a root span has no parentSpanId, an unset status no message") {
    span root = sample_span();
    root.parent_span_id = 0;
    root.status = span_status::unset;
    const auto s = only_span(otlp_traces_json(resource, {root}));
    CHECK_FALSE(s.contains("parentSpanId"));
    CHECK(s.at("status").at("code") == 0);
    CHECK_FALSE(s.at("status").as_object().contains("message"));
  }
}
