// Bytes that are not UTF-8 from the caller, the model or a tool are mended
// where they enter an agent: what is committed, streamed and answered is
// valid UTF-8, and a durable thread loads again afterwards.

#include "support/runtime_harness.hpp"

#include "json/utf8.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/sqlite_file.hpp"

#include <sqlite3.h>

#include <filesystem>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

const std::string fffd = "\xEF\xBF\xBD";

// Every payload and refs text in the file, as another program would read it.
std::vector<std::string> stored_texts(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT payload, refs FROM entries ORDER BY seq", -1, &s, nullptr) == SQLITE_OK);
  std::vector<std::string> out;
  while (sqlite3_step(s) == SQLITE_ROW)
    for (int col : {0, 1})
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_blob(s, col)),
                       static_cast<std::size_t>(sqlite3_column_bytes(s, col)));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_CASE("text that is not UTF-8 is committed mended, and the thread loads again") {
  sqlite_file file("troupe-text");
  scripted_reply first = scripted_reply::tools({call("t1", "latin1", {{"q", "\xE9t\xE9"}})});
  first.chunks = {"caf\xE9 ", "\xE2\x9C"};
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{first, scripted_reply::text("fin\xE9")});
  std::vector<std::string> streamed;
  std::mutex streamed_mutex;
  {
    runtime rt({.provider = model, .store = std::make_shared<sqlite_store>(file.path.string())});
    rt.tools().add(make_tool("latin1", [](const json::object& args, const tool_context&) {
      return json::value(std::string("r\xE9sultat for ") + std::string(args.at("q").as_string()));
    }));
    agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = {"latin1"}});
    ask_options o;
    o.thread_id = "t";
    o.on_event = [&](const stream_event& e) {
      std::lock_guard lock(streamed_mutex);
      if (const auto* d = std::get_if<delta_event>(&e)) streamed.push_back(d->text);
    };
    CHECK(answer_of(must_reply(a.ask("caf\xE9?", o))) == "fin" + fffd);
  }
  for (const std::string& d : streamed) CHECK(is_valid_utf8(d));
  const auto texts = stored_texts(file.path);
  REQUIRE(!texts.empty());
  for (const std::string& t : texts) {
    INFO(t);
    CHECK(is_valid_utf8(t));
  }

  sqlite_store reopened(file.path.string());
  auto loaded = reopened.load("t");
  REQUIRE(loaded.has_value());
  CHECK(loaded->at_seq(0)->payload.at("content") == json::value("caf" + fffd + "?"));
  const auto results = loaded->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0]->payload.at("result") == json::value("r" + fffd + "sultat for " + fffd + "t" + fffd));
  CHECK(loaded->last()->payload.at("content") == json::value("fin" + fffd));
}

TEST_CASE("a request id or thread id that is not UTF-8 is refused, not changed") {
  runtime rt({.provider = std::make_shared<scripted_provider>(std::vector<scripted_reply>{})});
  agent a = rt.spawn_agent({.id = "a", .model = "m"});
  SECTION("a thread id") {
    ask_options o;
    o.thread_id = "t\xFF";
    const reply r = must_reply(a.ask("hi", o));
    CHECK(error_type_of(r) == "invalid_query");
    CHECK(is_valid_utf8(std::get<error_info>(r.outcome).message));
  }
  SECTION("a request id") {
    ask_options o;
    o.request_id = "r\xFF";
    const reply r = must_reply(a.ask("hi", o));
    CHECK(error_type_of(r) == "invalid_query");
    CHECK(is_valid_utf8(r.request_id));
  }
}
