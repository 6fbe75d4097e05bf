#include "json/json_parse.hpp"
#include "json/json_text.hpp"

#include <boost/json.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace troupe;
namespace json = boost::json;

namespace {

// The text of a double, and whether it reads back as that very double.
std::string text_of(double d) {
  const std::string t = json_text(json::value(d));
  const json::value back = parse_json(t);
  INFO(t);
  REQUIRE(back.is_double());
  CHECK(back.get_double() == d);
  CHECK(std::signbit(back.get_double()) == std::signbit(d));
  return t;
}

}  // namespace

TEST_CASE("doubles are written as the shortest decimal that reads back the same") {
  SECTION("small") {
    CHECK(text_of(0.030335854) == "0.030335854");
    CHECK(text_of(0.0303) == "0.0303");
    CHECK(text_of(0.1) == "0.1");
    CHECK(text_of(5e-324) == "5e-324");
  }
  SECTION("large") {
    CHECK(text_of(24.6) == "24.6");
    CHECK(text_of(123456.789) == "123456.789");
    CHECK(text_of(1e300) == "1e+300");
    CHECK(text_of(std::numeric_limits<double>::max()) == "1.7976931348623157e+308");
  }
  SECTION("integral doubles keep a fraction, so they read back as doubles") {
    CHECK(text_of(24.0) == "24.0");
    CHECK(text_of(0.0) == "0.0");
    CHECK(text_of(123456789012.0) == "123456789012.0");
    CHECK(text_of(1e22) == "1e+22");
  }
  SECTION("negative") {
    CHECK(text_of(-0.5) == "-0.5");
    CHECK(text_of(-3.0) == "-3.0");
    CHECK(text_of(-0.0) == "-0.0");
    CHECK(text_of(-2.5e-7) == "-2.5e-07");
  }
  SECTION("NaN and infinity, which JSON cannot hold, are null") {
    CHECK(json_text(json::value(std::numeric_limits<double>::quiet_NaN())) == "null");
    CHECK(json_text(json::value(std::numeric_limits<double>::infinity())) == "null");
    CHECK(json_text(json::value(-std::numeric_limits<double>::infinity())) == "null");
  }
}

TEST_CASE("everything but doubles is written as Boost.JSON writes it") {
  SECTION("integers, booleans and null") {
    for (const json::value& v :
         {json::value(0), json::value(-42), json::value(std::numeric_limits<std::int64_t>::min()),
          json::value(std::numeric_limits<std::uint64_t>::max()), json::value(true), json::value(false),
          json::value(nullptr)})
      CHECK(json_text(v) == json::serialize(v));
  }
  SECTION("strings: every ASCII byte escaped as Boost escapes it, UTF-8 as it is") {
    std::string all;
    for (int c = 0; c < 128; ++c) {
      const std::string one(1, static_cast<char>(c));
      CHECK(json_text(json::value(one)) == json::serialize(json::value(one)));
      all += one;
    }
    CHECK(json_text(json::value(all)) == json::serialize(json::value(all)));
    const json::string mixed("tab\there \"quoted\" back\\slash \x01 caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80 /");
    CHECK(json_text(mixed) == json::serialize(mixed));
    CHECK(json_text(json::value("")) == "\"\"");
  }
  SECTION("nested objects and arrays, keys escaped too") {
    const json::value v = json::parse(R"({"a":[1,{"b\n":null,"c":[true,false,[]]},{}],"d":{"e":"f\u0007"},"":-7})");
    CHECK(json_text(v) == json::serialize(v));
    CHECK(json_text(v.as_object()) == json::serialize(v));
    CHECK(json_text(v.at("a").as_array()) == json::serialize(v.at("a")));
  }
  SECTION("doubles inside a document") {
    const json::value v{{"seconds", 24.6}, {"ratio", json::array{0.0303, 1.0, -2.0}}, {"n", 3}};
    CHECK(json_text(v) == R"({"seconds":24.6,"ratio":[0.0303,1.0,-2.0],"n":3})");
    CHECK(json::parse(json_text(v)) == v);
  }
}

TEST_CASE("text that is not UTF-8 is written with U+FFFD, so that every text written reads back") {
  const std::string fffd = "\xEF\xBF\xBD";
  SECTION("each byte past ASCII alone is ill-formed") {
    for (int c = 0x80; c < 0x100; ++c) {
      const std::string one(1, static_cast<char>(c));
      CHECK(json_text(json::value(one)) == "\"" + fffd + "\"");
    }
  }
  SECTION("Latin-1, a cut character, an overlong form, a surrogate, past U+10FFFF") {
    CHECK(json_text(json::string("caf\xE9!")) == "\"caf" + fffd + "!\"");
    CHECK(json_text(json::string("cut \xE2\x9C")) == "\"cut " + fffd + "\"");
    CHECK(json_text(json::string("\xC0\xAF")) == "\"" + fffd + "\"");
    CHECK(json_text(json::string("\xED\xA0\x80")) == "\"" + fffd + "\"");
    CHECK(json_text(json::string("\xF4\x90\x80\x80")) == "\"" + fffd + "\"");
  }
  SECTION("what follows a bad byte is still escaped") {
    CHECK(json_text(json::string("\xFF\"\n\xC3\xA9")) == "\"" + fffd + "\\\"\\n\xC3\xA9\"");
  }
  SECTION("keys too, and the text parses") {
    json::object o;
    o["k\xFE"] = "v\x80";
    const std::string text = json_text(o);
    boost::system::error_code ec;
    const json::value back = json::parse(text, ec);
    REQUIRE(!ec);
    CHECK(back.at("k" + fffd) == json::value("v" + fffd));
  }
}

TEST_CASE("a string's JSON size is the size of what is written, without writing it") {
  SECTION("plain, escaped, control characters, characters past ASCII") {
    for (const std::string& s : std::vector<std::string>{"", "plain", "quote \" and \\ backslash", "tab\tnew\nline\r",
                                                         std::string("nul\0x", 5), "\x01\x1F\x7F",
                                                         "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80"}) {
      std::string written;
      append_json_string(written, s);
      INFO(written);
      CHECK(json_string_size(s) == written.size());
    }
  }
  SECTION("random UTF-8 and control characters") {
    std::mt19937 random(5);
    const std::vector<std::string> pieces{"a",    "\"",       "\\",           "\n",
                                          "\x02", "\xC3\xA9", "\xE2\x9C\x93", "\xF0\x9F\x98\x80"};
    for (int i = 0; i < 2000; ++i) {
      std::string s;
      for (std::size_t n = random() % 30; n > 0; --n) s += pieces[random() % pieces.size()];
      std::string written;
      append_json_string(written, s);
      CHECK(json_string_size(s) == written.size());
    }
  }
  SECTION("none for text that is not UTF-8, whose written form depends on the repair") {
    CHECK_FALSE(json_string_size("caf\xE9"));
    CHECK_FALSE(json_string_size("cut \xE2\x9C"));
  }
}
