#include "runtime/llm/wire/sse_parser.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace troupe;

namespace {

std::vector<sse_event> parse(std::string_view bytes, const std::vector<std::size_t>& cuts = {}) {
  sse_parser p;
  std::vector<sse_event> out;
  auto collect = [&](const sse_event& e) { out.push_back(e); };
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    p.feed(bytes.substr(from, cut - from), collect);
    from = cut;
  }
  p.feed(bytes.substr(from), collect);
  return out;
}

bool same(const std::vector<sse_event>& a, const std::vector<sse_event>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].data != b[i].data || a[i].last_event_id != b[i].last_event_id) return false;
  return true;
}

std::vector<std::size_t> random_cuts(std::size_t size, std::mt19937& rng) {
  std::vector<std::size_t> cuts;
  std::uniform_int_distribution<std::size_t> step(1, 7);
  for (std::size_t at = step(rng); at < size; at += step(rng)) cuts.push_back(at);
  return cuts;
}

}  // namespace

TEST_CASE("server-sent events as the WHATWG specification reads them") {
  SECTION("data lines, event types and ids") {
    const auto events = parse("data: hello\n\nevent: ping\ndata: {}\nid: 7\n\n");
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "message");
    CHECK(events[0].data == "hello");
    CHECK(events[1].type == "ping");
    CHECK(events[1].data == "{}");
    CHECK(events[1].last_event_id == "7");
  }
  SECTION("several data lines join with newlines") { CHECK(parse("data: a\ndata:b\ndata\n\n").at(0).data == "a\nb\n"); }
  SECTION("one leading space is removed, a second is kept") { CHECK(parse("data:  two\n\n").at(0).data == " two"); }
  SECTION("comments and unknown fields are ignored") {
    const auto events = parse(": keep-alive\nfoo: bar\ndata: x\n\n:\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "x");
  }
  SECTION("CR, LF and CRLF all end lines") { CHECK(parse("data: a\r\rdata: b\n\ndata: c\r\n\r\n").size() == 3); }
  SECTION("a CRLF split across two reads is one line end") {
    const auto events = parse("data: a\r\n\r\ndata: b\r\n\r\n", {8, 10});
    REQUIRE(events.size() == 2);
    CHECK(events[1].data == "b");
  }
  SECTION("a blank line without data dispatches nothing and resets the type") {
    const auto events = parse("event: x\n\ndata: y\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "message");
  }
  SECTION("the id persists across events; an id with NUL is ignored") {
    using namespace std::string_literals;
    const auto events = parse("id: 1\ndata: a\n\ndata: b\n\nid: 2\0x\ndata: c\n\n"s);
    REQUIRE(events.size() == 3);
    CHECK(events[1].last_event_id == "1");
    CHECK(events[2].last_event_id == "1");
  }
  SECTION("retry takes digits only") {
    sse_parser p;
    p.feed("retry: 1500\n\nretry: 2s\n\n", [](const sse_event&) {});
    CHECK(p.retry_ms() == 1500);
  }
  SECTION("an event not closed by a blank line is not dispatched") {
    sse_parser p;
    std::size_t n = 0;
    p.feed("data: complete\n\ndata: cut off", [&](const sse_event&) { ++n; });
    CHECK(n == 1);
    CHECK(p.mid_event());
  }
  SECTION("a byte order mark before the first field is skipped") {
    CHECK(parse("\xEF\xBB\xBF"
                "data: x\n\n")
              .at(0)
              .data == "x");
  }
  SECTION("UTF-8 split across reads arrives whole") {
    const std::string text = "data: caf\xC3\xA9 \xF0\x9F\x98\x80\n\n";
    CHECK(parse(text, {10, 16, 17}).at(0).data == "caf\xC3\xA9 \xF0\x9F\x98\x80");
  }
}

TEST_CASE("the same events however the bytes are split") {
  const std::string corpus =
      ": comment\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\n"
      "data: line one\ndata: line two\n\nid: 42\rdata: cr only\r\r"
      "event: ping\ndata: {}\n\ndata: caf\xC3\xA9\n\ndata: [DONE]\n\n";
  const auto whole = parse(corpus);
  REQUIRE(whole.size() == 6);
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) CHECK(same(parse(corpus, random_cuts(corpus.size(), rng)), whole));
  std::vector<std::size_t> every_byte;
  for (std::size_t k = 1; k < corpus.size(); ++k) every_byte.push_back(k);
  CHECK(same(parse(corpus, every_byte), whole));
}

TEST_CASE("random bytes never crash the parser and split the same way") {
  // Bytes drawn mostly from what SSE is made of, so that fields, line ends
  // and blank lines occur often.
  const std::string alphabet = "data:event:id:retry: \r\n\r\n\n::x{}\"\xC3\xA9\0129";
  std::mt19937 rng(2026);
  for (int round = 0; round < 2'000; ++round) {
    std::string bytes(std::uniform_int_distribution<int>(0, 300)(rng), '\0');
    for (char& c : bytes)
      c = std::uniform_int_distribution<int>(0, 9)(rng) == 0
              ? static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng))
              : alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    const auto whole = parse(bytes);
    REQUIRE(same(parse(bytes, random_cuts(bytes.size(), rng)), whole));
  }
}

TEST_CASE("an event may not grow past the parser's cap") {
  std::vector<sse_event> events;
  auto collect = [&](const sse_event& e) { events.push_back(e); };

  SECTION("an event within the cap is dispatched") {
    sse_parser p(64);
    p.feed("data: " + std::string(50, 'x') + "\n\n", collect);
    CHECK(!p.overflowed());
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == std::string(50, 'x'));
  }
  SECTION("data lines that together pass the cap stop the parser") {
    sse_parser p(64);
    p.feed("data: " + std::string(40, 'x') + "\ndata: " + std::string(40, 'y') + "\n\ndata: next\n\n", collect);
    CHECK(p.overflowed());
    CHECK(events.empty());
  }
  SECTION("a line that never ends stops the parser, however it is fed") {
    sse_parser p(1024);
    for (int i = 0; i < 100; ++i) p.feed(std::string(100, 'z'), collect);
    CHECK(p.overflowed());
    CHECK(events.empty());
  }
  SECTION("the cap is per event: many events of any total size pass") {
    sse_parser p(64);
    for (int i = 0; i < 1000; ++i) p.feed("data: " + std::string(40, 'x') + "\n\n", collect);
    CHECK(!p.overflowed());
    CHECK(events.size() == 1000);
  }
}
