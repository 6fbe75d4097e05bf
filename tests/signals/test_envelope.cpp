#include "signals/envelope.hpp"

#include <boost/json.hpp>
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {

std::vector<signal> one_of_each() {
  query q{"r1", "t1", "What's 2+2? \xE2\x9C\x93", {}};
  q.overrides.model = "openai:gpt-4o-mini";
  q.overrides.max_iterations = 3;
  q.overrides.params.temperature = 0.25;
  q.overrides.params.stop = {"END"};
  q.overrides.context.summarize = true;
  q.overrides.context.summarize_to = 0.25;
  return {
      q,
      query{"r2", "", "plain", {}},
      query{"r3", "t", "traced", {}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
      query{"r4", "t", "Your feed: post p1.2.0 by @ada", {}, {}, observation_origin{"social", 3}},
      llm_delta{"c1", "Hel", "thinking…"},
      llm_result{"c1", llm_completion{"Hello", "", {}, token_usage{12, 3}, "stop"}},
      llm_result{"c2", llm_completion{"",
                                      "",
                                      {tool_call{"t1", "search", {{"q", "x"}}, std::nullopt},
                                       tool_call{"t2", "calc", {}, std::string("{bad")}},
                                      std::nullopt,
                                      "tool_calls"}},
      llm_result{"c3", error_info{"rate_limited", "slow down", 429, 4, 2.5}},
      tool_result{"c2", "t1", "search", json::parse(R"({"hits":[1,2],"next":null})")},
      tool_result{"c2", "t3", "noop", json::value(nullptr)},
      tool_result{"c2", "t2", "calc", error_info::of(error_type::invalid_arguments, "bad")},
      cancel{"r1", "user left"},
      cancel{"r1", "paused too long", "", true},
      decision{"r1", "t1", verdict::approve, "", {}, "ada", "k1"},
      decision{"r1", "t2", verdict::reject, "not now", {}, "", ""},
      decision{"r1", "t3", verdict::edit, "", {{"to", "carol"}}, "bob", ""},
      decision{"r1", "t4", verdict::approve, "", {}, "ada", "", "Tuesday", true},
      approval_tick{"r1"},
  };
}

json::value envelope_json(const signal& s) {
  return to_json(envelope{"ev-1", "/agents/a1", "t1", 1'763'700'000'123, s});
}

// Replaces one field of a valid query envelope.
json::value query_with(std::string_view field, json::value v) {
  json::value e = envelope_json(query{"r1", "t1", "hi", {}});
  e.as_object()["data"].as_object()[field] = std::move(v);
  return e;
}

}  // namespace

TEST_CASE("every signal survives an envelope round trip") {
  for (const signal& s : one_of_each()) {
    const json::value v = envelope_json(s);
    INFO(json::serialize(v));
    auto back = parse_envelope(json::serialize(v));
    REQUIRE(back);
    CHECK(back->data == s);
    CHECK(back->id == "ev-1");
    CHECK(back->source == "/agents/a1");
    CHECK(back->subject == "t1");
    CHECK(back->time_ms == 1'763'700'000'123);
  }
}

TEST_CASE("the envelope has the CloudEvents attributes and dotted type names") {
  const json::object o = envelope_json(cancel{"r1", "x"}).as_object();
  CHECK(o.at("specversion") == "1.0");
  CHECK(o.at("type") == "troupe.agent.cancel");
  CHECK(o.at("time") == "2025-11-21T04:40:00.123Z");
  CHECK(o.at("datacontenttype") == "application/json");
  CHECK(o.at("data").at("request_id") == "r1");
  CHECK(signal_type(query{}) == "troupe.agent.query");
  CHECK(signal_type(llm_delta{}) == "troupe.llm.delta");
  CHECK(signal_type(llm_result{}) == "troupe.llm.result");
  CHECK(signal_type(tool_result{}) == "troupe.tool.result");
  CHECK(signal_type(decision{}) == "troupe.agent.decision");
  CHECK(signal_type(approval_tick{}) == "troupe.agent.approval_tick");
}

TEST_CASE("bad envelopes give a typed error that names the field") {
  auto error_of = [](const json::value& v) {
    auto r = decode_envelope(v);
    REQUIRE(!r);
    return r.error();
  };
  const json::value good = envelope_json(query{"r1", "t1", "hi", {}});
  auto without = [&](std::string_view key) {
    json::value v = good;
    v.as_object().erase(key);
    return v;
  };
  auto with = [&](std::string_view key, json::value x) {
    json::value v = good;
    v.as_object()[key] = std::move(x);
    return v;
  };

  SECTION("an unknown type") {
    const auto e = error_of(with("type", "troupe.agent.dance"));
    CHECK(e.field == "type");
    CHECK_THAT(e.message, Catch::Contains("troupe.agent.dance"));
  }
  SECTION("missing envelope attributes") {
    CHECK(error_of(without("id")).field == "id");
    CHECK(error_of(without("type")).field == "type");
    CHECK(error_of(without("data")).field == "data");
    CHECK(error_of(without("specversion")).field == "specversion");
  }
  SECTION("an observation without its source, or with a negative round") {
    json::value v = query_with("observation", json::object{{"round", 2}});
    CHECK(error_of(v).field == "data.observation.source");
    v = query_with("observation", json::object{{"source", "social"}, {"round", -1}});
    CHECK(error_of(v).field == "data.observation.round");
  }
  SECTION("wrong envelope attributes") {
    CHECK(error_of(with("specversion", "0.3")).field == "specversion");
    CHECK(error_of(with("id", 12)).field == "id");
    CHECK(error_of(with("time", "yesterday")).field == "time");
    CHECK(error_of(with("datacontenttype", "text/plain")).field == "datacontenttype");
    CHECK(error_of(with("data", "text")).field == "data");
  }
  SECTION("a missing data field") {
    json::value v = good;
    v.as_object()["data"].as_object().erase("request_id");
    const auto e = error_of(v);
    CHECK(e.field == "data.request_id");
    CHECK(e.message == "is required");
  }
  SECTION("a data field of the wrong type") {
    const auto e = error_of(query_with("text", 42));
    CHECK(e.field == "data.text");
    CHECK(e.message == "expected a string");
  }
  SECTION("a required field that is null") { CHECK(error_of(query_with("text", nullptr)).field == "data.text"); }
  SECTION("an empty request id") { CHECK(error_of(query_with("request_id", "")).field == "data.request_id"); }
  SECTION("nested fields name their whole path") {
    CHECK(error_of(query_with("overrides", json::object{{"max_iterations", "ten"}})).field ==
          "data.overrides.max_iterations");
    CHECK(error_of(query_with("overrides", json::object{{"max_iterations", 0}})).field ==
          "data.overrides.max_iterations");
    CHECK(error_of(query_with("overrides", json::object{{"params", {{"stop", json::array{"a", 1}}}}})).field ==
          "data.overrides.params.stop[1]");
    json::value r = envelope_json(llm_result{"c", llm_completion{"", "", {tool_call{"t", "x", {}, {}}}, {}, ""}});
    r.as_object()["data"].as_object()["tool_calls"].as_array()[0].as_object()["name"] = true;
    CHECK(error_of(r).field == "data.tool_calls[0].name");
    json::value u = envelope_json(llm_result{"c", llm_completion{"hi", "", {}, token_usage{1, 1}, ""}});
    u.as_object()["data"].as_object()["usage"].as_object()["output_tokens"] = 1.5;
    CHECK(error_of(u).field == "data.usage.output_tokens");
  }
  SECTION("summarize_to is a fraction above 0 and at most 1") {
    auto summarize_to = [&](json::value f) {
      return query_with("overrides", json::object{{"context", {{"summarize_to", std::move(f)}}}});
    };
    for (const json::value& bad : {json::value(0), json::value(-0.5), json::value(1.5), json::value("half")}) {
      const auto e = error_of(summarize_to(bad));
      CHECK(e.field == "data.overrides.context.summarize_to");
    }
    CHECK(decode_envelope(summarize_to(0.25)));
    CHECK(decode_envelope(summarize_to(1)));
  }
  SECTION("a tool result with neither result nor error") {
    json::value v = envelope_json(tool_result{"c", "t", "x", json::value(1)});
    v.as_object()["data"].as_object().erase("result");
    CHECK(error_of(v).field == "data.result");
  }
  SECTION("an error without a type") {
    json::value v = envelope_json(llm_result{"c", error_info::of("server", "x")});
    v.as_object()["data"].as_object()["error"].as_object().erase("type");
    CHECK(error_of(v).field == "data.error.type");
  }
  SECTION("not an object at all") { CHECK(error_of(json::array{1}).message == "expected an object"); }
  SECTION("a decision with an unknown verdict, or an edit without arguments") {
    json::value v = envelope_json(decision{"r1", "t1", verdict::approve, "", {}, "", ""});
    v.as_object()["data"].as_object()["verdict"] = "maybe";
    CHECK(error_of(v).field == "data.verdict");
    v.as_object()["data"].as_object()["verdict"] = "edit";
    CHECK(error_of(v).field == "data.arguments");
    v.as_object()["data"].as_object().erase("tool_call_id");
    CHECK(error_of(v).field == "data.tool_call_id");
  }
}

TEST_CASE("malformed JSON is a decode error, not an exception") {
  auto r = parse_envelope(R"({"specversion": "1.0", "id": )");
  REQUIRE(!r);
  CHECK_THAT(r.error().message, Catch::StartsWith("malformed JSON"));
  CHECK_THROWS_AS(r.value(), decode_exception);
}

TEST_CASE("RFC 3339 timestamps") {
  CHECK(format_rfc3339(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_rfc3339(951'782'400'000) == "2000-02-29T00:00:00.000Z");
  CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_rfc3339("2000-02-29T00:00:00.000Z") == 951'782'400'000);
  CHECK(parse_rfc3339("2000-02-29T01:30:00.5+01:30") == 951'782'400'500);
  CHECK(parse_rfc3339("2000-02-28T23:00:00.123456-01:00") == 951'782'400'123);
  for (std::int64_t t : {0LL, 1LL, 999LL, 1'763'700'000'123LL, -86'400'001LL})
    CHECK(parse_rfc3339(format_rfc3339(t)) == t);
  CHECK(!parse_rfc3339("2001-02-29T00:00:00Z"));  // not a leap year
  CHECK(!parse_rfc3339("2000-01-01T00:00:00"));   // no offset
  CHECK(!parse_rfc3339("2000-01-01T24:00:00Z"));
  CHECK(!parse_rfc3339("2000-01-01T00:00:00.Z"));
  CHECK(!parse_rfc3339("2000-01-01T00:00:00Zjunk"));
}

TEST_CASE("usage that was not reported is null, never zero") {
  SECTION("a call without usage writes null and reads back as no usage") {
    const json::value v = envelope_json(llm_result{"c", llm_completion{"hi", "", {}, std::nullopt, "stop"}});
    CHECK(v.at("data").at("usage").is_null());
    const auto back = parse_envelope(json::serialize(v));
    REQUIRE(back);
    CHECK(!std::get<llm_completion>(std::get<llm_result>(back->data).outcome).usage);
  }
  SECTION("a sum counts the calls without usage apart") {
    token_usage total;
    total += std::optional<token_usage>(token_usage{10, 2});
    total += std::optional<token_usage>();
    total += std::optional<token_usage>();
    CHECK(total == token_usage{10, 2, 2});
    CHECK(json::serialize(to_json(total)) == R"({"input_tokens":10,"output_tokens":2,"calls_without_usage":2})");
    CHECK(decode_usage(to_json(total), "usage").value() == total);
  }
  SECTION("a sum whose calls all reported usage keeps its shape") {
    CHECK(json::serialize(to_json(token_usage{3, 4})) == R"({"input_tokens":3,"output_tokens":4})");
  }
  SECTION("a negative count of calls without usage is refused") {
    const auto e =
        decode_usage(json::parse(R"({"input_tokens":1,"output_tokens":1,"calls_without_usage":-1})"), "usage");
    REQUIRE(!e);
    CHECK(e.error().field == "usage.calls_without_usage");
  }
}
