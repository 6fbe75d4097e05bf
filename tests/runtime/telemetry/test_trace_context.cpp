// W3C traceparent: what parses, what is refused, and new spans' ids.

#include "runtime/telemetry/trace_context.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("traceparent headers are read and written in the W3C form", "[telemetry][trace_context]") {
  const std::string header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  SECTION("a valid header gives its trace id, parent id and flags, and is written back the same") {
    auto c = parse_traceparent(header);
    REQUIRE(c);
    CHECK(trace_id_hex(*c) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(span_id_hex(c->span_id) == "00f067aa0ba902b7");
    CHECK(c->sampled());
    CHECK(format_traceparent(*c) == header);
  }
  SECTION("an unsampled header keeps its flag") {
    auto c = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    REQUIRE(c);
    CHECK_FALSE(c->sampled());
  }
  SECTION("a later version may carry more fields after a dash") {
    CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
    CHECK_FALSE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"));
  }
  SECTION("malformed headers are refused") {
    CHECK_FALSE(parse_traceparent(""));
    CHECK_FALSE(parse_traceparent(header + "-"));                                               // version 00 is exact
    CHECK_FALSE(parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));  // forbidden version
    CHECK_FALSE(parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));  // upper case
    CHECK_FALSE(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));  // zero trace id
    CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));  // zero span id
    CHECK_FALSE(parse_traceparent("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"));
  }
}

TEST_CASE("new spans join their parent's trace or start one", "[telemetry][trace_context]") {
  random_ids ids(42);
  SECTION("a child keeps the parent's trace id and flags, with a span id of its own") {
    const span_context parent = *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    const span_context child = child_span(parent, ids, false);
    CHECK(trace_id_hex(child) == trace_id_hex(parent));
    CHECK(child.span_id != parent.span_id);
    CHECK(child.span_id != 0);
    CHECK(child.sampled());
  }
  SECTION("without a parent, a new random trace, sampled as asked") {
    const span_context a = child_span({}, ids, true), b = child_span({}, ids, false);
    CHECK(a.valid());
    CHECK(b.valid());
    CHECK(trace_id_hex(a) != trace_id_hex(b));
    CHECK(a.sampled());
    CHECK_FALSE(b.sampled());
  }
}
