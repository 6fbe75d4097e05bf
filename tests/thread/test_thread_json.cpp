#include "thread/thread_json.hpp"

#include <boost/json.hpp>
#include "support/catch_decoded.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

TEST_CASE("a thread survives a JSON round trip") {
  sequential_ids ids;
  thread t("t1", 100, json::object{{"user_id", "u1"}});
  t.append(
      {entry_draft{
           "message", {{"role", "user"}, {"content", "héllo \"quoted\" \xF0\x9F\x98\x80"}}, {{"request_id", "r1"}}},
       entry_draft{"tool_call", {{"name", "x"}, {"arguments", {{"a", 1.5}}}}, {{"tool_call_id", "c"}}}},
      200, ids);

  const json::value v = to_json(t);
  auto back = decode_thread(json::parse(json::serialize(v)));
  REQUIRE(back);
  CHECK(json::serialize(to_json(*back)) == json::serialize(v));
  CHECK(back->id() == "t1");
  CHECK(back->rev() == 2);
  CHECK(back->stats().count("tool_call") == 1);
  CHECK(*back->at_seq(0) == *t.at_seq(0));

  SECTION("the restored thread continues its numbering") {
    back->append(entry_draft{"note", {}, {}}, 300, ids);
    CHECK(back->last()->seq == 2);
    CHECK(back->rev() == 3);
  }
}

TEST_CASE("decoding a thread names the bad field") {
  const auto good = json::parse(R"({"id":"t","rev":1,"created_at":0,"updated_at":0,"metadata":{},
      "entries":[{"id":"e","seq":0,"at":0,"kind":"note","payload":{},"refs":{}}]})");
  auto with = [&](auto change) {
    json::value v = good;
    change(v.as_object());
    return decode_thread(v);
  };

  CHECK(decode_thread(good));
  CHECK(with([](json::object& o) { o.erase("id"); }).error().field == "id");
  CHECK(with([](json::object& o) { o["rev"] = "one"; }).error().field == "rev");
  CHECK(with([](json::object& o) { o["entries"] = 3; }).error().field == "entries");
  CHECK(with([](json::object& o) { o["entries"].as_array()[0].as_object().erase("kind"); }).error().field ==
        "entries[0].kind");
  CHECK(
      with([](json::object& o) { o["entries"].as_array()[0].as_object()["payload"] = json::array{}; }).error().field ==
      "entries[0].payload");
  CHECK(with([](json::object& o) { o["entries"].as_array()[0].as_object()["seq"] = 4; }).error().field ==
        "entries[0].seq");
  CHECK(decode_thread(json::value(42)).error().message == "expected an object");
}
