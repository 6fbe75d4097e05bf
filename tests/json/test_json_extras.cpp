#include "json/json_extras.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

TEST_CASE("json_extras: a copy shares the members instead of copying them") {
  const json_extras a(json::object{{"observation", json::object{{"source", "social"}, {"round", 4}}}});
  const json_extras b = a;
  REQUIRE(b.get());
  CHECK(b.get() == a.get());
  CHECK(b == a);
}

TEST_CASE("json_extras: the members outlive the extras they were made in") {
  json_extras kept;
  {
    const json_extras made(json::object{{"k", 1}});
    kept = made;
  }
  REQUIRE(kept.find("k"));
  CHECK(*kept.find("k") == 1);
}

TEST_CASE("json_extras: equal members in separate objects compare equal; a moved-from one is empty") {
  json_extras a(json::object{{"k", 1}}), b(json::object{{"k", 1}});
  CHECK(a == b);
  const json_extras c = std::move(a);
  CHECK(a.empty());  // NOLINT: reading the moved-from value is the point
  CHECK(c == b);
}
