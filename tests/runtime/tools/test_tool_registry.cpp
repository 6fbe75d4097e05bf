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

TEST_CASE("numbers a program writes as std::size_t count as integers, in schemas and arguments") {
  tool t = adder();
  t.spec.parameters["properties"].as_object()["name"] =
      json::object{{"type", "string"}, {"maxLength", std::size_t{4}}, {"minLength", std::size_t{1}}};
  tool_registry r;
  REQUIRE_NOTHROW(r.add(t));
  auto added = r.find("add");
  SECTION("an unsigned bound is enforced") {
    CHECK(added->validate({{"a", 1}, {"b", 2}, {"name", "toolong"}}));
    CHECK(!added->validate({{"a", 1}, {"b", 2}, {"name", "ok"}}));
  }
  SECTION("an unsigned argument is an integer") {
    CHECK(!added->validate({{"a", std::size_t{1}}, {"b", std::uint64_t{2}}}));
  }
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

namespace {

tool with_schema(json::object schema) {
  tool t;
  t.spec = {"shaped", "Takes what its schema says.", std::move(schema)};
  t.run = [](const json::object&, const tool_context&) { return json::value(nullptr); };
  return t;
}

json::object schema_of(std::string_view text) { return json::parse(text).as_object(); }

// What registering the schema threw, or "" when it was taken.
std::string refusal(json::object schema) {
  tool_registry r;
  try {
    r.add(with_schema(std::move(schema)));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A tree node: its children are nodes, through a $ref back to the node.
constexpr const char* tree_schema = R"({
  "type": "object",
  "properties": {
    "root": {"$ref": "#/$defs/node"}
  },
  "required": ["root"],
  "$defs": {
    "node": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
      },
      "required": ["name"]
    }
  }
})";

}  // namespace

TEST_CASE("schemas valijson would recurse on without end are refused before it compiles them") {
  SECTION("a schema that is a reference to itself") {
    CHECK_THAT(refusal(schema_of(R"({"$ref": "#"})")), Catch::Contains("cycle of \"$ref\""));
  }
  SECTION("two definitions that refer to each other (definitions)") {
    CHECK_THAT(refusal(schema_of(R"({"type": "object", "properties": {"x": {"$ref": "#/definitions/a"}},
                                     "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}})")),
               Catch::Contains("cycle of \"$ref\""));
  }
  SECTION(
      "two definitions that refer to each other ($defs) through allOf: compiles, then recurses on every validation") {
    CHECK_THAT(refusal(schema_of(R"({"$ref": "#/$defs/a",
                                     "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}})")),
               Catch::Contains("cycle of \"$ref\""));
  }
  SECTION("a schema that applies itself to the same value (compiles, then recurses on every validation)") {
    CHECK_THAT(refusal(schema_of(R"({"anyOf": [{"type": "string"}, {"$ref": "#"}]})")),
               Catch::Contains("without descending into the value"));
  }
  SECTION("a relative id in a recursive schema: every pass opens a new scope") {
    CHECK_THAT(refusal(schema_of(R"({"id": "a/", "type": "object", "properties": {"x": {"$ref": "#"}}})")),
               Catch::Contains("relative \"id\""));
  }
  SECTION("a reference to a document of its own, which valijson resolves against this one") {
    CHECK_THAT(refusal(schema_of(R"({"$ref": "other.json"})")), Catch::Contains("cycle of \"$ref\""));
  }
  SECTION("a pointer of a hundred thousand empty tokens") {
    const std::string ref = "#" + std::string(100'000, '/') + "definitions/a";
    CHECK_THAT(
        refusal(json::object{{"properties", {{"x", {{"$ref", ref}}}}}, {"definitions", {{"a", json::object{}}}}}),
        Catch::Contains("tokens"));
  }
  SECTION("a hundred thousand nested schemas") {
    json::value nested = json::object{};
    for (int i = 0; i < 100'000; ++i) {
      json::object outer;
      outer["items"] = std::move(nested);
      nested = std::move(outer);
    }
    CHECK_THAT(refusal(std::move(nested.as_object())), Catch::Contains("nests more than 64 levels"));
  }
  SECTION("ten thousand definitions, each referring to the next") {
    json::object definitions;
    for (int i = 0; i < 10'000; ++i)
      definitions["d" + std::to_string(i)] = {
          {"properties", {{"next", {{"$ref", "#/definitions/d" + std::to_string(i + 1)}}}}}};
    definitions["d10000"] = json::object{};
    CHECK_THAT(refusal({{"$ref", "#/definitions/d0"}, {"definitions", std::move(definitions)}}),
               Catch::Contains("recurse more than"));
  }
}

TEST_CASE("a recursive schema whose references descend into the value is compiled and applied") {
  tool_registry r;
  r.add(with_schema(schema_of(tree_schema)));
  const auto t = r.find("shaped");
  REQUIRE(t);

  SECTION("a nested tree passes") {
    CHECK_FALSE(t->validate(schema_of(
        R"({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}})")));
  }
  SECTION("a violation deep in the tree is named with its path") {
    const auto invalid =
        t->validate(schema_of(R"({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}})"));
    REQUIRE(invalid);
    CHECK_THAT(invalid->message, Catch::Contains("/root/children/0/children/0/name"));
  }
  SECTION("a tree whose node is the root itself") {
    tool_registry own;
    own.add(with_schema(schema_of(R"({"type": "object", "properties": {"name": {"type": "string"},
                                      "children": {"type": "array", "items": {"$ref": "#"}}}})")));
    CHECK_FALSE(own.find("shaped")->validate(schema_of(R"({"name": "a", "children": [{"children": [{}]}]})")));
    CHECK(own.find("shaped")->validate(schema_of(R"({"children": [{"children": [{"name": 1}]}]})")));
  }
}
