#include "runtime/tools/builtin_tools.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("the calculator does real arithmetic") {
  CHECK(evaluate_expression("1 + 2 * 3") == 7);
  CHECK(evaluate_expression("(1 + 2) * 3") == 9);
  CHECK(evaluate_expression("2 ^ 3 ^ 2") == 512);  // right-associative
  CHECK(evaluate_expression("-2 ^ 2") == -4);
  CHECK(evaluate_expression("7 % 4") == 3);
  CHECK(evaluate_expression("10 / 4") == 2.5);
  CHECK(evaluate_expression(" 1.5e3 - -2 ") == 1502);
}

TEST_CASE("bad expressions are typed errors that say where") {
  auto error_for = [](const char* e) {
    try {
      evaluate_expression(e);
    } catch (const tool_failure& f) {
      CHECK(f.type == "invalid_expression");
      return std::string(f.what());
    }
    FAIL("no error for " << e);
    return std::string();
  };
  CHECK_THAT(error_for("1 / 0"), Catch::Contains("division by zero"));
  CHECK_THAT(error_for("2 +"), Catch::Contains("ends too soon"));
  CHECK_THAT(error_for("(1 + 2"), Catch::Contains("')' is missing"));
  CHECK_THAT(error_for("2 $ 3"), Catch::Contains("position 3"));
  CHECK_THAT(error_for("10 ^ 999"), Catch::Contains("finite"));
}

TEST_CASE("the built-in tools through the registry") {
  tool_registry r;
  r.add(calculator_tool());
  r.add(current_time_tool());
  const tool_context ctx;
  auto ok = r.find("calculator")->run_once({{"expression", "6 * 7"}}, ctx);
  CHECK(std::get<boost::json::value>(ok.outcome).at("value") == 42);
  auto bad = r.find("calculator")->run_once({{"expression", "6 *"}}, ctx);
  CHECK(std::get<error_info>(bad.outcome).type == "invalid_expression");
  auto missing = r.find("calculator")->run_once({}, ctx);
  CHECK(std::get<error_info>(missing.outcome).type == "invalid_arguments");
  auto now = r.find("current_time")->run_once({}, ctx);
  CHECK(std::get<boost::json::value>(now.outcome).at("utc").as_string().size() == 24);
}

TEST_CASE("ask_human is answered by a person: its spec says so, and run by itself it says why it has no answer") {
  tool_registry r;
  r.add(ask_human_tool());
  const auto ask = r.find("ask_human");
  REQUIRE(ask);
  CHECK(ask->definition().spec.answered_by_person);
  CHECK(!calculator_tool().spec.answered_by_person);
  const tool_context ctx;
  CHECK(std::get<error_info>(ask->run_once({}, ctx).outcome).type == "invalid_arguments");  // no question
  CHECK(std::get<error_info>(ask->run_once({{"question", "Which day?"}}, ctx).outcome).type == "unsupported");
  // Not among the tools offered by name: a program that has a person to ask adds it.
  for (const tool& t : builtin_tools()) CHECK(t.spec.name != "ask_human");
}
