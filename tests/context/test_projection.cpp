#include "context/projection.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/entry_builders.hpp"

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

TEST_CASE("the projection of a whole thread") {
  sequential_ids ids;
  thread t("t");
  t.append({msg("user", "q"), tcall("c1", "a", "search"), tcall("c1", "b", "lookup"),
            tresult("", "a", "found", "search"), tresult("", "b", json::object{{"n", 1}}),
            entry_draft{"note", {{"text", "internal"}}, {}}, msg("assistant", "answer", "c2")},
           1, ids);

  const auto m = project_messages("sys", t, {});

  SECTION("the system prompt comes first") {
    CHECK(m.at(0).role == "system");
    CHECK(m.at(0).content == "sys");
  }
  SECTION("tool calls of one model call form one assistant message, then their results") {
    REQUIRE(m.size() == 6);
    CHECK(m[2].role == "assistant");
    REQUIRE(m[2].tool_calls.size() == 2);
    CHECK(m[2].tool_calls[0].id == "a");
    CHECK(m[2].tool_calls[0].name == "search");
    CHECK(m[2].tool_calls[1].arguments == json::object{{"k", "b"}});
    CHECK(m[3].role == "tool");
    CHECK(m[3].tool_call_id == "a");
    CHECK(m[3].name == "search");
    CHECK(m[3].content == "found");
    CHECK(m[4].content == R"({"n":1})");
  }
  SECTION("records that are not conversation are left out") {
    for (const auto& x : m) CHECK(x.content != "internal");
    CHECK(m.back().content == "answer");
  }
  SECTION("without a system prompt there is no system message") {
    CHECK(project_messages("", t, {}).front().role == "user");
  }
}

TEST_CASE("pending entries are projected after the committed ones") {
  sequential_ids ids;
  thread t("t");
  t.append(msg("user", "q1"), 1, ids);
  const std::vector<entry_draft> pending{msg("assistant", "a1"), msg("user", "q2")};
  const auto m = project_messages("", t, pending);
  REQUIRE(m.size() == 3);
  CHECK(m[2].content == "q2");
  CHECK(t.size() == 1);
}

TEST_CASE("tool calls of different model calls are separate assistant messages") {
  sequential_ids ids;
  thread t("t");
  t.append({msg("user", "q"), tcall("c1", "a", "x"), tresult("", "a", 1, "x"), tcall("c2", "b", "x"),
            tresult("", "b", 2, "x")},
           1, ids);
  const auto m = project_messages("", t, {});
  REQUIRE(m.size() == 5);
  CHECK(m[1].tool_calls.size() == 1);
  CHECK(m[3].tool_calls.size() == 1);
  CHECK(m[3].tool_calls[0].id == "b");
}

TEST_CASE("a tool error reads as an error object") {
  const json::object payload{{"name", "x"}, {"error", {{"type", "timeout"}, {"message", "slow"}}}};
  CHECK(tool_result_text(payload) == R"({"error":{"type":"timeout","message":"slow"}})");
}

TEST_CASE("a tool result's numbers read to the model as plain decimals") {
  const json::object payload{{"name", "calculator"}, {"result", {{"value", 0.0303}, {"total", 24.0}}}};
  CHECK(tool_result_text(payload) == R"({"value":0.0303,"total":24.0})");
}
