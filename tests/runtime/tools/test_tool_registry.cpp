#include "runtime/tools/tool_registry.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {
tool adder() {
  tool t;
  t.spec = {"add", "Adds two integers.",
            json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
                           "required":["a","b"],"additionalProperties":false})")
                .as_object()};
  t.run = [](const json::object& args, const tool_context&) {
    return json::value(args.at("a").as_int64() + args.at("b").as_int64());
  };
  return t;
}
}  // namespace

TEST_CASE("arguments are validated against the tool's JSON Schema") {
  tool_registry r;
  r.add(adder());
  auto t = r.find("add");
  REQUIRE(t);

  SECTION("valid arguments pass") { CHECK(!t->validate({{"a", 1}, {"b", 2}})); }
  SECTION("a missing required field is named") {
    auto e = t->validate({{"a", 1}});
    REQUIRE(e);
    CHECK(e->type == "invalid_arguments");
    CHECK_THAT(e->message, Catch::Contains("b"));
  }
  SECTION("a field of the wrong type is named with its path") {
    auto e = t->validate({{"a", 1}, {"b", "two"}});
    REQUIRE(e);
    CHECK_THAT(e->message, Catch::Contains("/b"));
  }
  SECTION("an extra field is refused when the schema says so") { CHECK(t->validate({{"a", 1}, {"b", 2}, {"c", 3}})); }
}

TEST_CASE("running a tool never throws") {
  tool_registry r;
  r.add(adder());
  tool thrower = adder();
  thrower.spec.name = "thrower";
  thrower.run = [](const json::object&, const tool_context&) -> json::value { throw std::runtime_error("boom"); };
  r.add(thrower);
  tool typed = adder();
  typed.spec.name = "typed";
  typed.run = [](const json::object&, const tool_context&) -> json::value {
    throw tool_failure("rate_limited", "later", true);
  };
  r.add(typed);
  const tool_context ctx;

  auto ok = r.find("add")->run_once({{"a", 2}, {"b", 3}}, ctx);
  CHECK(std::get<json::value>(ok.outcome) == 5);
  auto invalid = r.find("add")->run_once({{"a", "x"}, {"b", 3}}, ctx);
  CHECK(std::get<error_info>(invalid.outcome).type == "invalid_arguments");
  auto thrown = r.find("thrower")->run_once({{"a", 2}, {"b", 3}}, ctx);
  CHECK(std::get<error_info>(thrown.outcome).type == "tool_failed");
  CHECK(std::get<error_info>(thrown.outcome).message == "boom");
  CHECK(!thrown.retryable);
  auto retry = r.find("typed")->run_once({{"a", 2}, {"b", 3}}, ctx);
  CHECK(std::get<error_info>(retry.outcome).type == "rate_limited");
  CHECK(retry.retryable);
}

TEST_CASE("the registry refuses what it cannot use") {
  tool_registry r;
  tool nameless = adder();
  nameless.spec.name = "";
  CHECK_THROWS_AS(r.add(nameless), std::invalid_argument);
  tool bad_schema = adder();
  bad_schema.spec.parameters = {{"type", 12}};
  CHECK_THROWS_AS(r.add(bad_schema), std::invalid_argument);
  r.add(adder());
  CHECK_THROWS_WITH(r.specs({"add", "nope", "zip"}), Catch::Contains("nope, zip"));
  CHECK(r.specs({"add"})->at(0).name == "add");
}

TEST_CASE("backoff grows by the multiplier up to its cap") {
  retry_policy p{5, std::chrono::milliseconds(100), 2.0, std::chrono::milliseconds(300)};
  CHECK(p.backoff_before(2).count() == 100);
  CHECK(p.backoff_before(3).count() == 200);
  CHECK(p.backoff_before(4).count() == 300);
}
