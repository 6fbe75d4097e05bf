// Text that is not UTF-8 is mended where it comes in, so that everything
// troupe commits and writes reads back.

#include "json/utf8.hpp"
#include "signals/signal.hpp"

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <random>

using namespace troupe;
namespace json = boost::json;

namespace {
const std::string fffd = "\xEF\xBF\xBD";
}

TEST_CASE("UTF-8 is told from what is not") {
  SECTION("well-formed text of every length of character") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8("plain ASCII \x01\x7F"));
    CHECK(is_valid_utf8("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"));
  }
  SECTION("ill-formed: a stray continuation, a cut character, overlong, surrogates, past U+10FFFF") {
    for (const char* bad : {"\x80", "caf\xE9", "\xE2\x9C", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80",
                            "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF"})
      CHECK_FALSE(is_valid_utf8(bad));
  }
  SECTION("a character at any offset in ASCII text, whole or cut, and ASCII after it") {
    // The check reads ASCII eight bytes at a time: every offset within and
    // past a word, and text after the character, are checked too.
    for (std::size_t at = 0; at < 20; ++at) {
      const std::string before(at, 'a');
      INFO("offset " << at);
      CHECK(is_valid_utf8(before + "\xE2\x9C\x93" + std::string(at, 'b')));
      CHECK_FALSE(is_valid_utf8(before + "\xE2\x9C" + std::string(at, 'b')));
      CHECK_FALSE(is_valid_utf8(before + "\xFF"));
      CHECK_FALSE(is_valid_utf8(before + "\xE2\x9C\x93" + std::string(at, 'b') + "\x80"));
    }
  }
  SECTION("one sequence at a time, as the JSON writer checks them") {
    const std::string s = "a\xC3\xA9\xE2\x9C\x93\xF0\x9F\x98\x80\xE2\x9C";
    CHECK(utf8_sequence_at(s, 0) == 1);
    CHECK(utf8_sequence_at(s, 1) == 2);
    CHECK(utf8_sequence_at(s, 3) == 3);
    CHECK(utf8_sequence_at(s, 6) == 4);
    CHECK(utf8_sequence_at(s, 10) == 0);  // cut short by the end
    CHECK(utf8_sequence_at(s, 2) == 0);   // a continuation byte
    CHECK(utf8_sequence_at("\xED\xA0\x80", 0) == 0);
    CHECK(utf8_sequence_at("\xC1\xBF", 0) == 0);
  }
  SECTION("agrees with the whole-text check on random bytes") {
    std::mt19937 random(7);
    for (int i = 0; i < 20000; ++i) {
      std::string s(1 + random() % 4, '\0');
      for (char& c : s) c = static_cast<char>(0x80 + random() % 0x80);
      s[0] = static_cast<char>(0xC0 + random() % 0x40);
      const std::size_t n = utf8_sequence_at(s, 0);
      INFO("sequence " << i);
      if (n) {
        CHECK(is_valid_utf8(s.substr(0, n)));
      } else {
        // No text that starts with an ill-formed sequence is valid, however long.
        for (std::size_t len = 1; len <= s.size(); ++len) CHECK_FALSE(is_valid_utf8(s.substr(0, len)));
      }
    }
  }
}

TEST_CASE("what is not UTF-8 is replaced by U+FFFD, the rest kept") {
  CHECK(valid_utf8("caf\xE9 au lait") == "caf" + fffd + " au lait");
  CHECK(valid_utf8("cut at the end \xE2\x9C") == "cut at the end " + fffd);
  CHECK(valid_utf8("\xC3\xA9\xFF\xC3\xA9") == "\xC3\xA9" + fffd + "\xC3\xA9");
  std::string s = "fine \xE2\x9C\x93";
  CHECK_FALSE(repair_utf8(s));
  CHECK(s == "fine \xE2\x9C\x93");
  std::string latin1 = "na\xEFve";
  CHECK(repair_utf8(latin1));
  CHECK(latin1 == "na" + fffd + "ve");
  SECTION("any bytes at all come out valid") {
    std::mt19937 random(11);
    for (int i = 0; i < 2000; ++i) {
      std::string bytes(random() % 40, '\0');
      for (char& c : bytes) c = static_cast<char>(random());
      CHECK(is_valid_utf8(valid_utf8(bytes)));
    }
  }
}

TEST_CASE("JSON values are mended in every string and key") {
  json::value v{{"ok", "fine"}, {"list", json::array{"a\xFF", 1, json::object{{"deep", "\xC0"}}}}};
  v.as_object()["k\xFE"] = "v";
  CHECK(repair_utf8(v));
  CHECK(v.at("ok") == "fine");
  CHECK(v.at("list").at(0) == json::value("a" + fffd));
  CHECK(v.at("list").at(2).at("deep") == json::value(fffd));
  CHECK(v.as_object().contains("k" + fffd));
  CHECK_FALSE(v.as_object().contains("k\xFE"));
  CHECK_FALSE(repair_utf8(v));
}

TEST_CASE("signals are mended in what they bring in; a query's ids are left alone") {
  SECTION("a question") {
    signal s = query{"req\xFF", "thread\xFF", "caf\xE9?", {}, {}};
    CHECK(repair_utf8(s));
    const auto& q = std::get<query>(s);
    CHECK(q.text == "caf" + fffd + "?");
    CHECK(q.request_id == "req\xFF");
    CHECK(q.thread_id == "thread\xFF");
  }
  SECTION("a model's answer, its tool calls and its errors") {
    llm_completion c;
    c.text = "x\x80";
    c.tool_calls.push_back(tool_call{"id\xFF", "name", json::object{{"q", "\xE9t\xE9"}}, std::string("raw\xFE")});
    signal s = llm_result{"c1", c};
    CHECK(repair_utf8(s));
    const auto& done = std::get<llm_completion>(std::get<llm_result>(s).outcome);
    CHECK(done.text == "x" + fffd);
    CHECK(done.tool_calls[0].id == "id" + fffd);
    CHECK(done.tool_calls[0].arguments.at("q") == json::value(fffd + "t" + fffd));
    CHECK(*done.tool_calls[0].invalid_arguments == "raw" + fffd);
    signal failed = llm_result{"c2", error_info::of("server", "HTTP 500: \xE9rreur")};
    CHECK(repair_utf8(failed));
    CHECK(std::get<error_info>(std::get<llm_result>(failed).outcome).message == "HTTP 500: " + fffd + "rreur");
  }
  SECTION("a tool's output, a delta and a cancel's reason") {
    signal tool = tool_result{"c1", "t1", "shell", json::value("\xFF\xFE")};
    CHECK(repair_utf8(tool));
    CHECK(std::get<json::value>(std::get<tool_result>(tool).outcome) == json::value(fffd + fffd));
    signal delta = llm_delta{"c1", "\xE2\x9C", ""};
    CHECK(repair_utf8(delta));
    CHECK(std::get<llm_delta>(delta).text == fffd);
    signal stop = cancel{"r1", "stop\xA0"};
    CHECK(repair_utf8(stop));
    CHECK(std::get<cancel>(stop).reason == "stop" + fffd);
  }
  SECTION("valid signals are left as they are") {
    signal s = query{"r", "t", "caf\xC3\xA9", {}, {}};
    const signal before = s;
    CHECK_FALSE(repair_utf8(s));
    CHECK(s == before);
  }
}
