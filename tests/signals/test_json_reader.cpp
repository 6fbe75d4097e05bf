#include "signals/json_reader.hpp"

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
