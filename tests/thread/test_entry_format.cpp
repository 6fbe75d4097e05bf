// Entries are typed in memory and exactly the JSON they were made from at
// every edge. tests/fixtures/entries_v0.json was written by the entry code
// before the typed representation (commit 8b378c3), from a thread with every
// kind troupe writes and shapes it does not.

#include "support/fixtures.hpp"
#include "thread/thread_json.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {

std::string without_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

const entry& by_seq(const thread& t, std::uint64_t seq) { return *t.at_seq(seq); }

}  // namespace

TEST_CASE("a thread stored before entries were typed reads back byte for byte") {
  const std::string text = without_newline(testing::fixture("entries_v0.json"));
  auto t = decode_thread(json::parse(text));
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 23);

  SECTION("the whole thread as JSON is the text it was read from") { CHECK(json::serialize(to_json(*t)) == text); }

  SECTION("each entry's payload and refs write the same text as their JSON objects") {
    const json::value parsed = json::parse(text);
    const json::array& stored = parsed.at("entries").as_array();
    for (const entry& e : t->entries()) {
      INFO("entry " << e.seq << " (" << e.kind << ")");
      const json::object& s = stored[e.seq].as_object();
      CHECK(json_text(e.payload) == json_text(s.at("payload")));
      CHECK(json_text(e.refs) == json_text(s.at("refs")));
      CHECK(json::serialize(to_json(e)) == json::serialize(s));
    }
  }

  SECTION("the shapes troupe writes are typed; the others stay JSON") {
    CHECK(by_seq(*t, 0).payload.get_if<message_payload>());
    CHECK(by_seq(*t, 1).payload.get_if<message_payload>()->thinking == "needs a tool");
    CHECK(by_seq(*t, 2).payload.get_if<tool_call_payload>());
    CHECK(by_seq(*t, 4).payload.get_if<tool_result_payload>());
    CHECK(by_seq(*t, 5).payload.get_if<tool_result_payload>()->is_error());
    CHECK(by_seq(*t, 8).payload.get_if<error_payload>());
    CHECK(by_seq(*t, 17).payload.get_if<summary_payload>()->model == "small");
    CHECK(by_seq(*t, 19).payload.get_if<error_payload>()->extra.find("http_status"));
    // Unknown kinds, keys in another order, members of another type, empty optional members.
    for (std::uint64_t seq : {9, 10, 11, 13, 14, 18, 20, 21, 22}) {
      INFO("entry " << seq);
      CHECK_FALSE(by_seq(*t, seq).payload.is_typed());
    }
  }

  SECTION("unknown payload and refs members are kept, and read like the known ones") {
    const entry& e = by_seq(*t, 12);
    REQUIRE(e.payload.get_if<message_payload>());
    CHECK(e.payload.string("name") == "alice");
    CHECK(e.payload.at("meta") == json::value{{"x", 1}});
    CHECK(e.refs.request_id() == "req-3");
    CHECK(e.refs.string("parent") == "p-1");
    CHECK(e.refs.extras().find("weights"));
  }

  SECTION("refs that do not fit the typed fields are read from their JSON") {
    const entry& odd = by_seq(*t, 13);  // request_id 7, iteration "one"
    CHECK(odd.refs.request_id().empty());
    CHECK(odd.refs.value("request_id") == json::value(7));
    CHECK_FALSE(odd.refs.iteration());
    const entry& reordered = by_seq(*t, 14);  // tool_call_id, call_id, request_id, iteration
    CHECK(reordered.refs.call_id() == "c-9");
    CHECK(reordered.refs.iteration() == 1);
  }

  SECTION("a payload held as JSON answers the same reads as a typed one") {
    const entry& reversed = by_seq(*t, 11);  // {"content", "role"}
    CHECK(reversed.payload.string("role") == "user");
    CHECK(reversed.payload.string("content") == "order reversed");
    CHECK(estimate_tokens(reversed.kind, reversed.payload) ==
          estimate_tokens(reversed.kind, entry_payload(reversed.payload.to_json())));
  }
}

TEST_CASE("a tool entry's tokens are estimated from its JSON text's size, measured or written") {
  const auto from_text = [](const entry_payload& p) {
    return 4 + static_cast<std::int64_t>((json_text(p).size() + 3) / 4);
  };
  const json::object arguments{{"text", "Re: \"quoted\"\n caf\u00e9"}, {"n", 3}};
  for (const entry_payload& p :
       {entry_payload(tool_call_payload::of("reply", arguments, std::nullopt)),
        entry_payload(tool_call_payload::of("reply", arguments, std::string("{not json"))),
        entry_payload(tool_result_payload::of("post", json::value(json::object{{"id", "p-1"}}))),
        entry_payload(tool_result_payload::of("say", json::value("a \"string\" result\twith escapes"))),
        entry_payload(tool_result_payload::of("post", error_info::of("refused", "no such post \"p-9\""))),
        entry_payload(tool_result_payload::of("na\xEFve", json::value("latin-1 \xE9 in a result")))}) {
    INFO(json_text(p));
    const std::string_view kind = p.get_if<tool_call_payload>() ? entry_kind::tool_call : entry_kind::tool_result;
    CHECK(estimate_tokens(kind, p) == from_text(p));
  }
}

TEST_CASE("typed payloads and refs write the JSON the machine wrote before") {
  SECTION("a message with thinking and a finish reason") {
    const entry_payload p = message_payload{"assistant", "hi", "hmm", "stop", {}};
    CHECK(json_text(p) == R"({"role":"assistant","content":"hi","thinking":"hmm","finish_reason":"stop"})");
    CHECK(entry_payload::from_json("message", p.to_json()) == p);
  }
  SECTION("a tool call keeps its arguments") {
    const auto p = tool_call_payload::of("weather", json::object{{"city", "Zürich"}, {"n", 2.5}}, std::nullopt);
    CHECK(json_text(entry_payload(p)) == R"({"name":"weather","arguments":{"city":"Zürich","n":2.5}})");
    CHECK(p.arguments() == json::object{{"city", "Zürich"}, {"n", 2.5}});
  }
  SECTION("a tool call's invalid_arguments, empty or not, follows its arguments and reads back") {
    for (const std::string text : {"{\"q\": ", ""}) {
      const entry_payload p = tool_call_payload::of("t", {}, text);
      CHECK(json_text(p) ==
            json_text(json::object{{"name", "t"}, {"arguments", json::object()}, {"invalid_arguments", text}}));
      CHECK(p.string("invalid_arguments") == text);
      const entry_payload back = entry_payload::from_json("tool_call", p.to_json());
      CHECK(back.is_typed());
      CHECK(back == p);
    }
  }
  SECTION("tool results: a string, a value, an error") {
    CHECK(json_text(entry_payload(tool_result_payload::of("t", json::value("ok")))) == R"({"name":"t","result":"ok"})");
    CHECK(json_text(entry_payload(tool_result_payload::of("t", json::value{{"a", nullptr}}))) ==
          R"({"name":"t","result":{"a":null}})");
    CHECK(json_text(entry_payload(tool_result_payload::of("t", error_info::of("timeout", "slow")))) ==
          R"({"name":"t","error":{"type":"timeout","message":"slow"}})");
  }
  SECTION("refs in the machine's order") {
    CHECK(json_text(entry_refs::of("r", 2, "c", "t")) ==
          R"({"request_id":"r","iteration":2,"call_id":"c","tool_call_id":"t"})");
    CHECK(json_text(entry_refs::of("r", 1)) == R"({"request_id":"r","iteration":1})");
  }
  SECTION("refs write the text of their JSON object, escapes and extra members included") {
    entry_refs r = entry_refs::of("req \"1\"\n\u00e9", 12, "c\\", "t\x01");
    r.set("parent", json::value{{"n", 2.5}, {"s", "\t"}});
    CHECK(json_text(r) == json_text(r.to_json()));
    CHECK(json_text(entry_refs()) == "{}");
    CHECK(json_text(entry_refs::of("a\"b\n", -3, "c")) == R"({"request_id":"a\"b\n","iteration":-3,"call_id":"c"})");
  }

  SECTION("setting a refs member keeps the others in place") {
    entry_refs r = entry_refs::of("r", 1, "c");
    r.set("parent", "p");
    r.set("call_id", "c2");
    CHECK(json_text(r) == R"({"request_id":"r","iteration":1,"call_id":"c2","parent":"p"})");
  }
}

TEST_CASE("small strings hold short text in place and long text exactly") {
  const small_string empty;
  const small_string in_place = "entry_5f0c2a9e41d7b3c8";
  const small_string longer(std::string(100, 'x'));
  CHECK(empty.empty());
  CHECK(in_place == "entry_5f0c2a9e41d7b3c8");
  CHECK(in_place.size() == 22);
  CHECK(longer == std::string(100, 'x'));
  small_string moved = small_string(longer);
  CHECK(moved == longer);
  small_string copy = moved;
  moved = in_place;
  CHECK(copy == std::string(100, 'x'));
  CHECK(moved == in_place);
  CHECK(small_string("a") < small_string("b"));
  copy.clear();   // from the heap
  moved.clear();  // in place
  CHECK(copy.empty());
  CHECK(moved.empty());
  CHECK(copy == "");
}

TEST_CASE("an entry's kind is 8 bytes: troupe's kinds point at constants, others are held exactly") {
  const kind_name message = "message";
  const kind_name mine = "my.custom_kind";
  const kind_name none;
  CHECK(message == entry_kind::message);
  CHECK(message.view().data() == kind_name("message").view().data());  // one constant, not a copy each
  CHECK(mine == "my.custom_kind");
  CHECK(mine.size() == 14);
  CHECK(none.empty());
  CHECK(none == "");
  kind_name copy = mine;
  kind_name moved = std::move(copy);
  CHECK(moved == mine);
  CHECK(copy.empty());
  copy = message;
  CHECK(copy == message);
  moved = message;  // gives its own block back
  CHECK(moved == "message");
  CHECK(kind_name("a") < kind_name("b"));
}

TEST_CASE("a message's role and finish reason are 8 bytes: the providers' words point at constants") {
  const message_payload p{"assistant", "hi", {}, "tool_calls", {}};
  CHECK(p.role.view().data() == message_word("assistant").view().data());
  CHECK(p.finish_reason == "tool_calls");
  const message_payload odd{"narrator", "once upon a time", {}, "ran_out_of_story", {}};
  CHECK(odd.role == "narrator");
  CHECK(odd.finish_reason == "ran_out_of_story");
  CHECK(json_text(entry_payload(odd)) ==
        R"({"role":"narrator","content":"once upon a time","finish_reason":"ran_out_of_story"})");
  CHECK(entry_payload::from_json("message", entry_payload(odd).to_json()) == entry_payload(odd));
}

TEST_CASE("refs whose iteration does not fit 32 bits stay JSON, byte for byte") {
  const std::string text = R"({"request_id":"req_1","iteration":4294967296,"call_id":"call_1"})";
  const entry_refs refs(boost::json::parse(text).as_object());
  CHECK(json_text(refs) == text);
  CHECK(refs.iteration() == 4294967296);
  CHECK(refs.call_id() == "call_1");
  const entry_refs made = entry_refs::of("req_1", 4294967296, "call_1");
  CHECK(json_text(made) == text);
  CHECK(json_text(entry_refs::of("req_1", 3, "call_1")) ==
        R"({"request_id":"req_1","iteration":3,"call_id":"call_1"})");
}
