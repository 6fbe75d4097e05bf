#include "json/json_parse.hpp"
#include "json/json_text.hpp"

#include <boost/json.hpp>

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

using namespace troupe;
namespace json = boost::json;

namespace {

std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

double read_double(std::string_view text) {
  const json::value v = parse_json(text);
  REQUIRE(v.is_double());
  return v.get_double();
}

}  // namespace

TEST_CASE("doubles are read correctly rounded") {
  SECTION("one that Boost.JSON reads a unit in the last place off") {
    // The compiler's reading of the literal is correctly rounded.
    CHECK(bits(read_double("14.127156320378683")) == bits(14.127156320378683));
    CHECK(bits(parse_json(R"({"x": [14.127156320378683]})").at("x").at(0).as_double()) == bits(14.127156320378683));
  }
  SECTION("integers beyond 64 bits, exponents, signed zero and the smallest subnormal") {
    CHECK(bits(read_double("123456789012345678901234567890")) == bits(123456789012345678901234567890.0));
    CHECK(bits(read_double("1E5")) == bits(1e5));
    CHECK(bits(read_double("-0.0")) == bits(-0.0));
    CHECK(bits(read_double("4.9406564584124654e-324")) == bits(std::numeric_limits<double>::denorm_min()));
    CHECK(bits(read_double("1.7976931348623157e308")) == bits(std::numeric_limits<double>::max()));
  }
  SECTION("too small for a double: zero of its sign, its correctly rounded value") {
    CHECK(bits(read_double("1e-400")) == bits(0.0));
    CHECK(bits(read_double("-2.4e-324")) == bits(-0.0));
  }
}

TEST_CASE("random doubles round-trip bit for bit through parse, write, parse") {
  std::mt19937_64 random(20261126);
  std::size_t differ = 0;
  json::array values;
  for (int i = 0; i < 100'000; ++i) {
    double d = std::bit_cast<double>(random());
    if (!std::isfinite(d)) continue;
    // Half of them in the range tool arguments and scores live in.
    if (i % 2) d = std::ldexp(std::fmod(d, 1.0), static_cast<int>(random() % 40) - 20);
    values.emplace_back(d);
    const std::string text = json_text(json::value(d));
    const double once = read_double(text);
    const double twice = read_double(json_text(json::value(once)));
    if (bits(once) != bits(d) || bits(twice) != bits(d)) {
      if (++differ <= 5) UNSCOPED_INFO(text << " read back as " << json_text(json::value(once)));
    }
  }
  CHECK(differ == 0);
  SECTION("and so does a document of them") {
    const json::value back = parse_json(json_text(values));
    CHECK(back == json::value(values));
    CHECK(json_text(back) == json_text(values));
  }
}

TEST_CASE("a number beyond a double's range is an error, not infinity") {
  for (const char* text : {"1e400", "-1e400", R"({"x": 1.7976931348623159e308})", "[1, 2e999]"}) {
    INFO(text);
    boost::system::error_code ec;
    const json::value v = parse_json(text, ec);
    CHECK(ec == json_parse_error::number_out_of_range);
    CHECK_THAT(ec.message(), Catch::Contains("beyond the range of a double"));
    CHECK(v.is_null());
  }
  CHECK_THROWS_AS(parse_json("1e400"), boost::system::system_error);
}

TEST_CASE("everything else reads as boost::json::parse reads it") {
  SECTION("values") {
    const std::string text = R"({"a": [1, -2, 18446744073709551615, true, null, "s\u00e9"], "b": {"c": 0.5}})";
    CHECK(parse_json(text) == json::parse(text));
    CHECK(parse_json(text).at("a").at(2).is_uint64());
    CHECK(parse_json(text).at("a").at(1).is_int64());
  }
  SECTION("errors, with the same codes") {
    for (const char* bad : {"", "{", "{} x", "[1,]", "nul", "\"\\x\""}) {
      INFO(bad);
      boost::system::error_code ours, theirs;
      (void)parse_json(bad, ours);
      (void)json::parse(bad, theirs);
      CHECK(ours);
      CHECK(ours == theirs);
    }
  }
  SECTION("options, such as the nesting limit") {
    const std::string deep = std::string(33, '[') + std::string(33, ']');
    boost::system::error_code ec;
    (void)parse_json(deep, ec);
    CHECK(ec == json::error::too_deep);
    json::parse_options deeper;
    deeper.max_depth = 64;
    CHECK(parse_json(deep, deeper).is_array());
  }
}
