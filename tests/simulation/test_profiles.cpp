// Profiles (CSV with RFC 4180 quoting, JSONL) and the persona templates they
// fill: every mistake in a profiles file is refused naming its line.

#include "simulation/profiles.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

namespace {

const std::string fixtures = std::string(TROUPE_FIXTURES_DIR) + "/simulation/";

// The error `read` throws, which must be an `Error`.
template <class Error, class Read>
Error refusal(Read read, std::string_view input) {
  try {
    read(input);
  } catch (const Error& e) {
    return e;
  }
  FAIL("accepted: " << input);
  throw;
}

profile_error csv_refusal(std::string_view text) {
  return refusal<profile_error>([](std::string_view t) { parse_csv_profiles(t, "people.csv"); }, text);
}

profile_error jsonl_refusal(std::string_view text) {
  return refusal<profile_error>([](std::string_view t) { parse_jsonl_profiles(t, "people.jsonl"); }, text);
}

persona_error persona_refusal(std::string_view tmpl, const boost::json::object& profile = {}) {
  return refusal<persona_error>([&](std::string_view t) { fill_persona(t, profile); }, tmpl);
}

}  // namespace

TEST_CASE("CSV profiles") {
  SECTION("a header and records become one object of strings a record") {
    const auto p = parse_csv_profiles("name,age\nAda,36\nBo,41\n", "people.csv");
    REQUIRE(p.size() == 2);
    CHECK(p[0] == boost::json::object{{"name", "Ada"}, {"age", "36"}});
    CHECK(p[1] == boost::json::object{{"name", "Bo"}, {"age", "41"}});
  }
  SECTION("a quoted field holds commas, doubled quotes and line breaks") {
    const auto p = parse_csv_profiles("name,bio\n\"Bo, Jr.\",\"said \"\"hi\"\"\nand left\"\n", "people.csv");
    REQUIRE(p.size() == 1);
    CHECK(p[0].at("name") == "Bo, Jr.");
    CHECK(p[0].at("bio") == "said \"hi\"\nand left");
  }
  SECTION("CRLF line endings end records; a CRLF inside quotes is kept") {
    const auto p = parse_csv_profiles("name,bio\r\nAda,\"a\r\nb\"\r\nBo,c\r\n", "people.csv");
    REQUIRE(p.size() == 2);
    CHECK(p[0].at("bio") == "a\r\nb");
    CHECK(p[1].at("bio") == "c");
  }
  SECTION("empty fields are empty strings, and the last line needs no line break") {
    const auto p = parse_csv_profiles("a,b,c\n,\"\",x", "people.csv");
    REQUIRE(p.size() == 1);
    CHECK(p[0] == boost::json::object{{"a", ""}, {"b", ""}, {"c", "x"}});
  }
  SECTION("blank lines and a byte order mark are skipped") {
    const auto p = parse_csv_profiles("\xEF\xBB\xBFname\n\nAda\n\n\nBo\n", "people.csv");
    REQUIRE(p.size() == 2);
    CHECK(p[0].contains("name"));
    CHECK(p[1].at("name") == "Bo");
  }
  SECTION("a record with too few or too many fields is refused on its own line") {
    const profile_error e = csv_refusal("name,bio\n\"Bo\",\"two\nlines\"\nAda\n");
    CHECK(e.line == 4);
    CHECK(e.reason == "a record of 1 field where the header has 2");
    CHECK(std::string(e.what()) == "a record of 1 field where the header has 2 (people.csv:4)");
    CHECK(csv_refusal("name\nAda,36\n").line == 2);
  }
  SECTION("a quote left open is refused on the line it opened") {
    const profile_error e = csv_refusal("name,bio\nAda,\"open\nstill\n");
    CHECK(e.line == 2);
    CHECK_THAT(e.reason, Catch::Contains("not closed"));
  }
  SECTION("text after a closing quote is refused") {
    CHECK_THAT(csv_refusal("name\n\"Ada\"x\n").reason, Catch::Contains("after a quoted field"));
  }
  SECTION("a quote inside an unquoted field is refused") {
    const profile_error e = csv_refusal("name\nA\"da\n");
    CHECK(e.line == 2);
    CHECK_THAT(e.reason, Catch::Contains("quote inside an unquoted field"));
  }
  SECTION("a header naming a field twice, or a field without a name, is refused") {
    CHECK_THAT(csv_refusal("name,name\nA,B\n").reason, Catch::Contains("\"name\" twice"));
    CHECK_THAT(csv_refusal("name,,age\nA,B,C\n").reason, Catch::Contains("has no name"));
  }
  SECTION("a file without a profile is refused") {
    CHECK_THAT(csv_refusal("").reason, Catch::Contains("no header"));
    CHECK_THAT(csv_refusal("name,age\n").reason, Catch::Contains("no profiles"));
  }
  SECTION("bytes that are not UTF-8 are refused on their line") {
    const profile_error e = csv_refusal("name\nAda\nB\xFFo\n");
    CHECK(e.line == 3);
    CHECK(e.reason == "not valid UTF-8");
  }
}

TEST_CASE("JSONL profiles") {
  SECTION("each line is an object, its values kept as JSON; blank lines are skipped") {
    const auto p = parse_jsonl_profiles("{\"name\":\"Ada\",\"age\":36}\n\n  \r\n{\"name\":\"Bo\"}\r\n", "p.jsonl");
    REQUIRE(p.size() == 2);
    CHECK(p[0].at("age") == 36);
    CHECK(p[1].at("name") == "Bo");
  }
  SECTION("a line that is not JSON is refused on its line") {
    const profile_error e = jsonl_refusal("{\"name\":\"Ada\"}\n\n{\"name\":\n");
    CHECK(e.line == 3);
    CHECK_THAT(e.reason, Catch::StartsWith("not JSON"));
  }
  SECTION("a line that is JSON but not an object is refused") {
    CHECK(jsonl_refusal("{}\n[1,2]\n").line == 2);
    CHECK_THAT(jsonl_refusal("\"Ada\"\n").reason, Catch::Contains("not a JSON object"));
  }
  SECTION("a file of blank lines is refused") {
    CHECK_THAT(jsonl_refusal("\n\n").reason, Catch::Contains("no profiles"));
  }
}

TEST_CASE("a profiles file is read by its extension") {
  SECTION(".csv as CSV") {
    const auto p = read_profiles(fixtures + "people.csv");
    REQUIRE(p.size() == 2);
    CHECK(p[1].at("city") == "New\nYork");
  }
  SECTION(".jsonl as JSONL") {
    const auto p = read_profiles(fixtures + "people.jsonl");
    REQUIRE(p.size() == 2);
    CHECK(p[1].at("age") == 41.5);
  }
  SECTION("another extension is refused") {
    CHECK_THROWS_AS(read_profiles(fixtures + "people.txt"), profile_error);
    CHECK(is_profiles_file("A.CSV"));
    CHECK(is_profiles_file("x.JsonL"));
    CHECK_FALSE(is_profiles_file("csv"));
  }
  SECTION("a missing file is refused naming it") {
    try {
      read_profiles(fixtures + "nobody.csv");
      FAIL("read a missing file");
    } catch (const profile_error& e) {
      CHECK(e.file == fixtures + "nobody.csv");
      CHECK(e.line == 0);
      CHECK(e.reason == "cannot be read");
    }
  }
}

TEST_CASE("a persona template") {
  const boost::json::object ada{{"name", "Ada"}, {"age", 36}, {"score", 1.5}, {"away", nullptr}, {"city", "Leeds"}};
  SECTION("has each {field} replaced by the profile's value") {
    CHECK(fill_persona("You are {name}, {age}, from {city}.", ada) == "You are Ada, 36, from Leeds.");
  }
  SECTION("shows numbers and other values as JSON text, null as nothing") {
    CHECK(fill_persona("{score}|{away}|{age}", ada) == "1.5||36");
    CHECK(fill_persona("{tags}", {{"tags", boost::json::array{"a", 1}}}) == "[\"a\",1]");
  }
  SECTION("writes {{ and }} as literal braces") {
    CHECK(fill_persona("{{name}} is {name}; }}{{", ada) == "{name} is Ada; }{");
  }
  SECTION("fills {id}, {group} and {index} from the agent when the profile lacks them") {
    CHECK(fill_persona("{id} of {group} #{index}", {}, {"residents-7", "residents", 7}) ==
          "residents-7 of residents #7");
  }
  SECTION("takes a field the profile has before the agent's own") {
    CHECK(fill_persona("{id}", {{"id", "u123"}}, {"residents-7", "residents", 7}) == "u123");
  }
  SECTION("refuses a field neither has, naming it") {
    const persona_error e = persona_refusal("You are {name} from {town}.", ada);
    CHECK(e.field == "town");
    CHECK_THAT(e.what(), Catch::Contains("{town}"));
  }
  SECTION("refuses a brace left open, a stray closing one and an empty field") {
    CHECK_THAT(persona_refusal("You are {name").what(), Catch::Contains("left open"));
    CHECK_THAT(persona_refusal("You are {na{me}").what(), Catch::Contains("left open"));
    CHECK_THAT(persona_refusal("a } b").what(), Catch::Contains("closes nothing"));
    CHECK_THAT(persona_refusal("a {} b").what(), Catch::Contains("empty field"));
    CHECK(persona_refusal("{").field.empty());
  }
  SECTION("names its fields in order, braces of the text left out") {
    CHECK(persona_fields("{a} {{b}} {c}{a}") == std::vector<std::string>{"a", "c", "a"});
    CHECK(persona_fields("plain").empty());
  }
}

TEST_CASE("a profiles file's fields, before the profiles are read") {
  SECTION("are a CSV file's header") {
    CHECK(profile_fields(fixtures + "people.csv") == std::vector<std::string>{"name", "age", "city"});
  }
  SECTION("are not known for JSONL, whose lines may differ") { CHECK_FALSE(profile_fields(fixtures + "people.jsonl")); }
  SECTION("of a missing file are refused") { CHECK_THROWS_AS(profile_fields(fixtures + "nobody.csv"), profile_error); }
}
