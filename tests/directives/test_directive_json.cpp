#include "directives/directive.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

TEST_CASE("every directive serialises to JSON with its type and fields") {
  SECTION("llm_stream") {
    llm_stream s{"c1",
                 "m",
                 {llm_message{"system", "sys", {}, {}, {}},
                  llm_message{"assistant", "", {tool_call{"t1", "x", {{"a", 1}}, {}}}, {}, {}},
                  llm_message{"tool", "42", {}, "t1", "x"}},
                 make_tool_set({tool_spec{"x", "does x", {{"type", "object"}}}}),
                 {},
                 "r1",
                 2,
                 {}};
    s.params.max_tokens = 64;
    const json::value v = to_json(directive{s});
    CHECK(v.at("type") == "llm_stream");
    CHECK(v.at("call_id") == "c1");
    CHECK(v.at("iteration") == 2);
    CHECK(v.at("params").at("max_tokens") == 64);
    CHECK(v.at("tools").at(0).at("name") == "x");
    CHECK(v.at("messages").at(1).at("tool_calls").at(0).at("arguments").at("a") == 1);
    CHECK(v.at("messages").at(2).at("tool_call_id") == "t1");
    CHECK(!v.at("messages").at(0).as_object().contains("tool_calls"));
  }
  SECTION("tool_exec") {
    const json::value v = to_json(directive{tool_exec{"c1", "t1", "x", {{"a", 1}}, 5000, "r1", 1}});
    CHECK(v.at("type") == "tool_exec");
    CHECK(v.at("tool_call_id") == "t1");
    CHECK(v.at("timeout_ms") == 5000);
  }
  SECTION("reply with an answer and with an error") {
    const json::value ok = to_json(directive{reply{"r1", std::string("hi"), token_usage{1, 2}, 1}});
    CHECK(ok.at("answer") == "hi");
    CHECK(ok.at("usage").at("output_tokens") == 2);
    CHECK(!ok.as_object().contains("error"));
    const json::value err = to_json(directive{reply{"r1", error_info::of(error_type::timeout, "slow", 3), {}, 2}});
    CHECK(err.at("error").at("type") == "timeout");
    CHECK(err.at("error").at("attempts") == 3);
    CHECK(!err.as_object().contains("answer"));
  }
  SECTION("request_error and cancel_call") {
    CHECK(to_json(directive{request_error{"r", "busy", "m"}}).at("reason") == "busy");
    const json::value c = to_json(directive{cancel_call{"c1", "t1"}});
    CHECK(c.at("type") == "cancel_call");
    CHECK(c.at("tool_call_id") == "t1");
    CHECK(!to_json(directive{cancel_call{"c1", ""}}).as_object().contains("tool_call_id"));
  }
  SECTION("awaiting_input lists the open approvals; decision_answer carries its error") {
    const json::value p = to_json(
        directive{awaiting_input{"r1", {open_approval{"t1", "send", {{"to", "bob"}}, "sends mail", 99}}, {}, 1}});
    CHECK(p.at("type") == "awaiting_input");
    CHECK(p.at("pending").at(0).at("tool") == "send");
    CHECK(p.at("pending").at(0).at("expires_at") == 99);
    CHECK(!to_json(directive{decision_answer{"r1", "t1", "", std::nullopt}}).as_object().contains("error"));
    const json::value refused =
        to_json(directive{decision_answer{"r1", "t1", "k", error_info::of(error_type::expired, "late")}});
    CHECK(refused.at("error").at("type") == "expired");
    CHECK(refused.at("idempotency_key") == "k");
  }
}
