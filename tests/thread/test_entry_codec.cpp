// The compact form of entries (a memory store's for many threads) reads back
// exactly what was written: every kind troupe writes and shapes it does not.

#include "support/fixtures.hpp"
#include "thread/entry_codec.hpp"
#include "thread/thread_json.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {

thread fixture_thread() {
  std::string text = testing::fixture("entries_v0.json");
  auto t = decode_thread(json::parse(text));
  REQUIRE(t.has_value());
  return std::move(*t);
}

std::string written(const thread_view& t) {
  std::string bytes;
  const entry* previous = nullptr;
  for (const entry& e : t.entries()) {
    entry_codec::write(bytes, e, previous);
    previous = &e;
  }
  return bytes;
}

// Read back, an entry's token estimate is left to thread::restore.
entry without_tokens(entry e) {
  e.tokens = 0;
  return e;
}

}  // namespace

TEST_CASE("entries in the compact form read back equal, writing the same JSON") {
  const thread t = fixture_thread();
  auto back = entry_codec::read_all(written(t));
  REQUIRE(back.has_value());
  REQUIRE(back->size() == t.size());
  for (const entry& e : t.entries()) {
    INFO("entry " << e.seq << " (" << e.kind << ")");
    const entry& b = (*back)[e.seq];
    CHECK(b == without_tokens(e));
    CHECK(json::serialize(to_json(b)) == json::serialize(to_json(e)));
  }
}

TEST_CASE("troupe's own ids and repeated correlation ids take a few bytes, text its own length") {
  sequential_ids ids;
  thread t("t");
  const std::string content(200, 'x');
  t.append({entry_draft{message_payload{"user", content, {}, {}, {}}, entry_refs::of("r1/a1", 1)},
            entry_draft{"note", {{"n", 1}}, entry_refs::of("r1/a1", 1)}},
           1'767'225'600'000, ids);
  entry first = *t.at_seq(0), second = *t.at_seq(1);
  first.id = "entry_2467c253d72e143e";
  second.id = "entry_aa6d2182a54105e2";
  second.at = first.at + 1;
  std::string bytes;
  entry_codec::write(bytes, first, nullptr);
  const std::size_t first_size = bytes.size();
  entry_codec::write(bytes, second, &first);
  // The message: its content and "r1/a1", a byte or two for each of the rest
  // (the time from 0 takes six).
  CHECK(first_size <= content.size() + 5 + 40);
  // The note: its JSON text ({"n":1}), the kind, the id's 8 bytes, and
  // repeats of the request id that cost a byte.
  CHECK(bytes.size() - first_size <= 7 + 5 + 9 + 12);
  auto back = entry_codec::read_all(bytes);
  REQUIRE(back.has_value());
  CHECK((*back)[0] == without_tokens(first));
  CHECK((*back)[1] == without_tokens(second));
}

TEST_CASE("bytes that end inside an entry are an error naming that entry") {
  const thread t = fixture_thread();
  const std::string bytes = written(t);
  auto cut = entry_codec::read_all(std::string_view(bytes).substr(0, bytes.size() - 1));
  REQUIRE_FALSE(cut.has_value());
  CHECK(cut.error().field == "entries[" + std::to_string(t.size() - 1) + "]");
  CHECK(cut.error().message.find("ends early") != std::string::npos);
}

TEST_CASE("extras read back again are shared with the ones read before, equal") {
  sequential_ids ids;
  thread t("t");
  const json_extras origin(json::object{{"observation", json::object{{"round", 3}}}});
  t.append({entry_draft{message_payload{"user", "hello", {}, {}, origin}, entry_refs::of("r1/a1", 1)}},
           1'767'225'600'000, ids);
  const std::string bytes = written(t);
  auto once = entry_codec::read_all(bytes);
  auto again = entry_codec::read_all(bytes);
  REQUIRE(once.has_value());
  REQUIRE(again.has_value());
  const auto* a = (*once)[0].payload.get_if<message_payload>();
  const auto* b = (*again)[0].payload.get_if<message_payload>();
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->extra.get());
  CHECK(*a->extra.get() == *origin.get());
  CHECK(a->extra.get() == b->extra.get());
}
