#include "json/json_reader.hpp"

#include <boost/json.hpp>
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

TEST_CASE("the json reader keeps the first error and its path") {
  const json::value v =
      json::parse(R"({"s":"x","n":3,"f":2.0,"d":2.5,"b":true,"nul":null,"o":{},"big":18446744073709551615})");
  json_reader r(v, "root");

  SECTION("fields of the right type are read") {
    CHECK(r.string("s") == "x");
    CHECK(r.int64("n") == 3);
    CHECK(r.int64("f") == 2);  // a whole double counts as an integer
    CHECK(r.number("d") == 2.5);
    CHECK(r.boolean("b"));
    CHECK(r.object("o").empty());
    CHECK(r.ok());
  }
  SECTION("optional fields that are absent or null give nullopt") {
    CHECK(r.optional_string("missing") == std::nullopt);
    CHECK(r.optional_string("nul") == std::nullopt);
    CHECK(r.ok());
  }
  SECTION("a fraction is not an integer") {
    r.int64("d");
    CHECK(r.error() == decode_error{"root.d", "expected an integer"});
  }
  SECTION("an integer beyond int64 is refused") {
    r.int64("big");
    CHECK(r.error().field == "root.big");
  }
  SECTION("only the first error is kept") {
    r.string("n");
    r.boolean("s");
    CHECK(r.error() == decode_error{"root.n", "expected a string"});
  }
  SECTION("a required null is an error") {
    r.string("nul");
    CHECK(r.error().field == "root.nul");
  }
}

TEST_CASE("the json reader reads untrusted bytes in place") {
  const json::value v =
      json::parse(R"({"choices":[{"delta":{"content":"hi","tool_calls":[{"index":-1}]}}],"n":1e18,"m":1023.0,"t":7})");
  std::optional<decode_error> sink;
  const json_reader r(v.as_object(), "", sink);

  SECTION("text and integers within their bounds") {
    CHECK(r.integer<int>("m", 0, 1023) == 1023);
    CHECK(r.text("missing").empty());
    CHECK(!sink);
  }
  SECTION("an integer outside its bounds is an error naming them") {
    CHECK(!r.integer<std::size_t>("m", 0, 1022));
    CHECK(sink->describe() == "m: expected an integer from 0 to 1022");
  }
  SECTION("a double beyond 2^53 names no one integer") {
    CHECK(!r.integer<std::int64_t>("n"));
    CHECK(sink->field == "n");
  }
  SECTION("a text field of another type is an error") {
    CHECK(r.text("t").empty());
    CHECK(sink->describe() == "t: expected a string");
  }
  SECTION("a nested reader reports to the same sink, with the full path") {
    const auto choice = r.element(*r.find_array("choices"), "choices", 0);
    REQUIRE(choice);
    const auto delta = choice->nested("delta");
    REQUIRE(delta);
    CHECK(delta->text("content") == "hi");
    const auto call = delta->element(*delta->find_array("tool_calls"), "tool_calls", 0);
    REQUIRE(call);
    CHECK(!call->integer<std::size_t>("index", 0, 1023));
    REQUIRE(sink);
    CHECK(sink->describe() == "choices[0].delta.tool_calls[0].index: expected an integer from 0 to 1023");
    CHECK(!r.ok());
  }
  SECTION("an element that is not an object is an error at its index") {
    const json::array items{1};
    CHECK(!r.element(items, "choices", 0));
    CHECK(sink->field == "choices[0]");
  }
}

TEST_CASE("a copy of a json reader keeps its own error") {
  const json::value v = json::parse(R"({"a":{"b":"x"}})");
  json_reader r(v, "");
  const json_reader copy = r;
  copy.fail("a", "wrong");
  CHECK(!copy.ok());
  CHECK(r.ok());
  const auto a = r.nested("a");
  REQUIRE(a);
  a->fail("b", "also wrong");
  CHECK(r.error().describe() == "a.b: also wrong");
}
