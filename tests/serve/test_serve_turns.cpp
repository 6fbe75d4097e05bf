// Turns over HTTP: retries with an Idempotency-Key, the double-texting
// policies, reconnecting to a stream, clients that go away, and one user's
// flood beside another user's turn. The model is a gate the test opens, so
// nothing here waits on a clock.

#include "support/serve_fixture.hpp"
#include "support/sqlite_file.hpp"
#include "support/watched_store.hpp"

#include "apps/serve/event_position.hpp"
#include "runtime/store/thread_lease.hpp"

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

std::string str(const json::value& v) { return std::string(v.as_string()); }

std::string chat(const std::string& id) { return "/v1/conversations/web/" + id + "/messages"; }

// A streamed message whose first event (the conversation) has been read:
// the server has registered the turn.
struct open_turn {
  http_client client;
  std::string conversation_id;
  std::string request_id;
  open_turn(unsigned short port, const std::string& target, const std::string& agent, const std::string& text,
            header_list headers)
      : client(port) {
    const http_reply head = client.open_stream(target, message_body(agent, text), headers);
    REQUIRE(head.status == 200);
    auto first = client.next_event();
    REQUIRE(first);
    REQUIRE(first->name == "conversation");
    conversation_id = str(first->data.at("conversation_id"));
    request_id = str(first->data.at("request_id"));
  }
};

}  // namespace

TEST_CASE("serve: Idempotency-Key") {
  serve_fixture f;
  http_client c = f.client();
  const auto with_key = as_user(alice_key, {{"Idempotency-Key", "retry-1"}});

  SECTION("a retried POST returns the original turn and asks the model once") {
    const json::value a = c.send(http::verb::post, chat("c1"), message_body("helper", "hi"), with_key).json();
    const std::size_t calls = f.model->calls();
    const json::value b = c.send(http::verb::post, chat("c1"), message_body("helper", "hi"), with_key).json();
    CHECK(f.model->calls() == calls);
    CHECK(b.at("request_id") == a.at("request_id"));
    CHECK(b.at("answer") == a.at("answer"));
    CHECK(b.at("usage") == a.at("usage"));
    const json::value conv =
        c.send(http::verb::get, "/v1/conversations/" + str(a.at("conversation_id")), "", as_user(alice_key)).json();
    CHECK(conv.at("messages").as_array().size() == 2);
  }
  SECTION("a retry while the turn runs joins it and gets its answer") {
    open_turn first(f.port(), chat("c1"), "helper", "hold-idem", with_key);
    REQUIRE(f.model->wait_held("hold-idem"));
    http_client retry = f.client();
    retry.write(http::verb::post, chat("c1"), message_body("helper", "hold-idem"), with_key);
    // The retry is answered only when the one turn ends.
    REQUIRE(f.model->release("hold-idem"));
    const http_reply r = retry.read_reply();
    REQUIRE(r.status == 200);
    CHECK(str(r.json().at("request_id")) == first.request_id);
    CHECK(r.json().at("answer") == "done: hold-idem");
    CHECK(first.client.rest_of_stream().back().name == "message.completed");
    CHECK(f.model->calls() == 1);
  }
  SECTION("a retried stream replays the turn's events") {
    c.open_stream(chat("c1"), message_body("helper", "hi"), with_key);
    const auto original = c.rest_of_stream();
    c.open_stream(chat("c1"), message_body("helper", "hi"), with_key);
    const auto again = c.rest_of_stream();
    REQUIRE(again.size() == original.size());
    for (std::size_t i = 0; i < again.size(); ++i) {
      CHECK(again[i].name == original[i].name);
      CHECK(again[i].data == original[i].data);
    }
  }
  SECTION("the same key with another message is a 422") {
    c.send(http::verb::post, chat("c1"), message_body("helper", "hi"), with_key);
    const http_reply r = c.send(http::verb::post, chat("c1"), message_body("helper", "something else"), with_key);
    CHECK(r.status == 422);
    CHECK(r.error_type() == "idempotency_key_reused");
  }
  SECTION("the same key from another user is another turn") {
    const json::value a = c.send(http::verb::post, chat("c1"), message_body("helper", "hi"), with_key).json();
    const json::value b = c.send(http::verb::post, chat("c1"), message_body("helper", "hi"),
                                 as_user(bob_key, {{"Idempotency-Key", "retry-1"}}))
                              .json();
    CHECK(a.at("request_id") != b.at("request_id"));
    CHECK(f.model->calls() == 2);
  }
}

TEST_CASE("serve: Idempotency-Key holds across a restart") {
  const std::string db = (std::filesystem::temp_directory_path() / "troupe-serve-idem-test.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const auto with_key = as_user(alice_key, {{"Idempotency-Key", "across-restarts"}});
  json::value first;
  {
    serve_fixture f("sqlite:" + db);
    first = f.client().send(http::verb::post, chat("c1"), message_body("helper", "calc: 2 + 3"), with_key).json();
    REQUIRE(first.at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
  }
  serve_fixture f("sqlite:" + db);
  http_client c = f.client();
  SECTION("as one JSON object, read back from the thread (usage is not stored)") {
    const json::value again =
        c.send(http::verb::post, chat("c1"), message_body("helper", "calc: 2 + 3"), with_key).json();
    CHECK(f.model->calls() == 0);
    CHECK(again.at("request_id") == first.at("request_id"));
    CHECK(again.at("answer") == first.at("answer"));
    CHECK(again.at("entries_appended") == first.at("entries_appended"));
    CHECK(again.at("usage").is_null());
  }
  SECTION("as a stream of the turn's events") {
    c.open_stream(chat("c1"), message_body("helper", "calc: 2 + 3"), with_key);
    const auto events = c.rest_of_stream();
    std::vector<std::string> names;
    for (const auto& e : events) names.push_back(e.name);
    CHECK(names == std::vector<std::string>{"conversation", "tool.started", "tool.finished", "message.delta",
                                            "message.completed"});
    CHECK(events.back().data.at("answer") == first.at("answer"));
    CHECK(f.model->calls() == 0);
  }
  f.server->drain();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}

// A retry after a restart reads its turn by the request's index: the
// thread, however long, is never loaded whole for it.
TEST_CASE("serve: a retry after a restart finds its turn without loading the thread") {
  const std::string db = (std::filesystem::temp_directory_path() / "troupe-serve-idem-index-test.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const auto alice = as_user(alice_key);
  const auto with_key = as_user(alice_key, {{"Idempotency-Key", "by-index"}});
  const std::string ask = R"({"model":"helper","user":"u1","messages":[{"role":"user","content":"calc: 2 + 3"}]})";
  const auto openai_key = as_user(alice_key, {{"Idempotency-Key", "by-index"}, {"X-Troupe-Conversation", "c2"}});
  json::value first, first_openai;
  {
    serve_fixture f("sqlite:" + db);
    http_client c = f.client();
    c.send(http::verb::post, chat("c1"), message_body("helper", "an earlier turn"), alice);
    first = c.send(http::verb::post, chat("c1"), message_body("helper", "calc: 2 + 3"), with_key).json();
    first_openai = c.send(http::verb::post, "/v1/chat/completions", ask, openai_key).json();
    REQUIRE(first.at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
    REQUIRE(first_openai.at("choices").at(0).at("message").at("content") == first.at("answer"));
  }
  std::shared_ptr<watched_store> counting;
  serve_fixture f("sqlite:" + db, "", "", [&](std::shared_ptr<thread_store> s) -> std::shared_ptr<thread_store> {
    counting = std::make_shared<watched_store>(std::move(s));
    return counting;
  });
  http_client c = f.client();
  SECTION("on the conversations route") {
    const json::value again =
        c.send(http::verb::post, chat("c1"), message_body("helper", "calc: 2 + 3"), with_key).json();
    CHECK(again.at("answer") == first.at("answer"));
    CHECK(again.at("entries_appended") == first.at("entries_appended"));
    CHECK(counting->loads_of(str(first.at("thread_id"))) == 0);
  }
  SECTION("on the OpenAI route") {
    const json::value again = c.send(http::verb::post, "/v1/chat/completions", ask, openai_key).json();
    CHECK(again.at("choices") == first_openai.at("choices"));
    CHECK(counting->total_loads() == 0);
  }
  CHECK(f.model->calls() == 0);
  f.server->drain();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}

// A turn whose process died after its message was committed: the thread
// holds the message and nothing after it. Its Idempotency-Key's repeat
// continues it (the model asked once more), without the message twice.
TEST_CASE("serve: a keyed turn that never ended is continued by its repeat") {
  sqlite_file db("troupe-serve-continue");
  const std::string store = "sqlite:" + db.path.string();
  const auto with_key = as_user(alice_key, {{"Idempotency-Key", "died-under-it"}});
  {
    std::shared_ptr<watched_store> dying;
    serve_fixture f(store, "", "", [&](std::shared_ptr<thread_store> s) -> std::shared_ptr<thread_store> {
      dying = std::make_shared<watched_store>(std::move(s));
      return dying;
    });
    http_client live = f.client();
    live.open_stream(chat("c1"), message_body("helper", "hold-died"), with_key);
    REQUIRE(live.next_event()->name == "conversation");
    REQUIRE(f.model->wait_held("hold-died"));  // the message is committed by now
    dying->refuse_commits = true;
    REQUIRE(f.model->release("hold-died"));
    const auto ended = live.rest_of_stream();
    REQUIRE_FALSE(ended.empty());
    REQUIRE(ended.back().name == "error");
    f.server->drain();
  }
  serve_fixture f(store);
  http_client again = f.client();
  again.open_stream(chat("c1"), message_body("helper", "hold-died"), with_key);
  REQUIRE(f.model->wait_held("hold-died"));
  REQUIRE(f.model->release("hold-died"));
  const auto events = again.rest_of_stream();
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().name == "message.completed");
  CHECK(events.back().data.at("answer") == "done: hold-died");
  const auto conv = f.server->agents().store().conversations->get_or_create_conversation({"alice", "web", "c1"});
  REQUIRE(conv.has_value());
  auto thread = f.server->agents().store().threads->load(conv->thread_id);
  REQUIRE(thread.has_value());
  std::size_t questions = 0;
  for (const entry& e : thread->entries())
    if (const auto* m = e.payload.get_if<message_payload>(); m && m->role == "user") ++questions;
  CHECK(questions == 1);
  f.server->drain();
}

TEST_CASE("serve: a second message while a turn runs") {
  serve_fixture f;
  const auto alice = as_user(alice_key);

  SECTION("enqueue (the default) runs it after the first, in order") {
    open_turn first(f.port(), chat("c1"), "helper", "hold-1", alice);
    REQUIRE(f.model->wait_held("hold-1"));
    open_turn second(f.port(), chat("c1"), "helper", "after", alice);
    CHECK(second.conversation_id == first.conversation_id);
    // The second turn waits for the first: its model call has not been made.
    CHECK(f.model->calls() == 1);
    REQUIRE(f.model->release("hold-1"));
    CHECK(first.client.rest_of_stream().back().data.at("answer") == "done: hold-1");
    CHECK(second.client.rest_of_stream().back().data.at("answer") == "echo: after");
    const json::value conv =
        f.client().send(http::verb::get, "/v1/conversations/" + first.conversation_id, "", alice).json();
    const auto& m = conv.at("messages").as_array();
    REQUIRE(m.size() == 4);
    CHECK(m[0].at("content") == "hold-1");
    CHECK(m[1].at("content") == "done: hold-1");
    CHECK(m[2].at("content") == "after");
  }
  SECTION("enqueue past the agent's queue bound is a 429 with Retry-After") {
    open_turn first(f.port(), chat("c1"), "tiny", "hold-q", alice);
    REQUIRE(f.model->wait_held("hold-q"));
    open_turn queued(f.port(), chat("c1"), "tiny", "queued", alice);
    const http_reply r = f.client().send(http::verb::post, chat("c1"), message_body("tiny", "one too many"), alice);
    CHECK(r.status == 429);
    CHECK(r.error_type() == "queue_full");
    CHECK(r.header("retry-after") == "1");
    f.model->release("hold-q");
    CHECK(queued.client.rest_of_stream().back().name == "message.completed");
  }
  SECTION("reject answers 409 while the turn runs, and takes messages again after it") {
    open_turn first(f.port(), chat("c1"), "strict", "hold-r", alice);
    REQUIRE(f.model->wait_held("hold-r"));
    http_client c = f.client();
    const http_reply r = c.send(http::verb::post, chat("c1"), message_body("strict", "too soon"), alice);
    CHECK(r.status == 409);
    CHECK(r.error_type() == "busy");
    f.model->release("hold-r");
    first.client.rest_of_stream();
    REQUIRE(f.counter->wait_turns(1));
    CHECK(c.send(http::verb::post, chat("c1"), message_body("strict", "now"), alice).status == 200);
  }
  SECTION("interrupt cancels the running turn and runs the new one") {
    open_turn first(f.port(), chat("c1"), "urgent", "hold-i", alice);
    REQUIRE(f.model->wait_held("hold-i"));
    const http_reply r = f.client().send(http::verb::post, chat("c1"), message_body("urgent", "instead"), alice);
    REQUIRE(r.status == 200);
    CHECK(r.json().at("answer") == "echo: instead");
    CHECK(f.model->wait_cancelled("hold-i"));
    const auto rest = first.client.rest_of_stream();
    REQUIRE_FALSE(rest.empty());
    CHECK(rest.back().name == "error");
    CHECK(rest.back().data.at("error").at("type") == "cancelled");
  }
}

TEST_CASE("serve: reconnecting to a turn's events") {
  serve_fixture f;
  const auto alice = as_user(alice_key);
  open_turn first(f.port(), chat("c1"), "helper", "hold-re", alice);
  REQUIRE(f.model->wait_held("hold-re"));
  auto delta = first.client.next_event();
  REQUIRE(delta);
  // "partial", 7 bytes after the question (seq 0).
  CHECK(delta->id == serve::event_id(0, 7));
  const std::string events = "/v1/conversations/" + first.conversation_id + "/events";

  SECTION("with ?after= gets the events after that one, then the live ones") {
    first.client.close();
    http_client again = f.client();
    again.open_stream(events + "?after=0", "", alice, http::verb::get);
    auto conversation = again.next_event();
    REQUIRE(conversation);
    CHECK(conversation->name == "conversation");
    auto e = again.next_event();
    REQUIRE(e);
    CHECK(e->id == delta->id);
    CHECK(e->data.at("text") == "partial");
    f.model->release("hold-re");
    const auto rest = again.rest_of_stream();
    REQUIRE(rest.size() == 2);
    CHECK(rest[0].id == serve::event_id(0, 20));
    CHECK(rest[1].name == "message.completed");
  }
  SECTION("with Last-Event-ID does the same") {
    http_client again = f.client();
    again.open_stream(events, "", as_user(alice_key, {{"Last-Event-ID", std::to_string(delta->id)}}), http::verb::get);
    f.model->release("hold-re");
    const auto rest = again.rest_of_stream();
    REQUIRE(rest.size() == 2);
    CHECK(rest[0].id == serve::event_id(0, 20));
  }
  SECTION("after the turn replays it") {
    f.model->release("hold-re");
    const auto live = first.client.rest_of_stream();
    http_client again = f.client();
    again.open_stream(events + "?after=0", "", alice, http::verb::get);
    const auto replay = again.rest_of_stream();
    // The turn's two deltas are kept as one, under the last one's id.
    REQUIRE(replay.size() == 3);
    CHECK(replay[0].name == "conversation");
    CHECK(replay[1].id == serve::event_id(0, 20));
    CHECK(replay[1].data.at("text") == "partialdone: hold-re");
    CHECK(replay[2].data == live.back().data);
  }
}

// Event ids are places in the thread, so the ids a client saw live are the
// ones the turn has when told again from the store: after a restart, a
// Last-Event-ID from the live stream resumes it with nothing twice and
// nothing missed, though a later turn of the conversation has run since.
TEST_CASE("serve: a Last-Event-ID from a live stream resumes the turn from the store after a restart") {
  const std::string db = (std::filesystem::temp_directory_path() / "troupe-serve-resume-test.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const auto alice = as_user(alice_key);
  std::vector<sse_message> live;
  std::string conversation;
  {
    serve_fixture f("sqlite:" + db);
    http_client c = f.client();
    REQUIRE(c.send(http::verb::post, chat("c1"), message_body("helper", "an earlier turn"), alice).status == 200);
    c.open_stream(chat("c1"), message_body("helper", "calc-words: 2 + 3"), alice);
    live = c.rest_of_stream();
    REQUIRE_FALSE(live.empty());
    conversation = str(live[0].data.at("conversation_id"));
    // A later turn: the id alone says which turn a reconnect is for.
    REQUIRE(c.send(http::verb::post, chat("c1"), message_body("helper", "a later turn"), alice).status == 200);
  }
  std::vector<std::string> names;
  for (const auto& e : live) names.push_back(e.name);
  REQUIRE(names == std::vector<std::string>{"conversation", "tool.started", "tool.finished", "message.delta",
                                            "message.delta", "message.delta", "message.completed"});
  CHECK(live[0].id == 0);
  for (std::size_t i = 2; i < live.size(); ++i) CHECK(live[i].id > live[i - 1].id);

  serve_fixture f("sqlite:" + db);
  const std::string events = "/v1/conversations/" + conversation + "/events";
  auto resumed = [&](std::optional<std::uint64_t> last_seen) {
    http_client c = f.client();
    header_list h = last_seen ? as_user(alice_key, {{"Last-Event-ID", std::to_string(*last_seen)}}) : alice;
    const http_reply head = c.open_stream(events, "", h, http::verb::get);
    REQUIRE(head.status == 200);
    return c.rest_of_stream();
  };
  // What a client that saw the live stream up to event k still needs: the
  // rest, with the deltas still to come as one (the store keeps the message
  // whole), under the last one's id, and the usage unknown.
  for (std::size_t k = 1; k + 1 < live.size(); ++k) {
    INFO("the last event seen live: " << k << " (" << live[k].name << ")");
    const auto rest = resumed(live[k].id);
    std::vector<sse_message> expected;
    for (std::size_t i = k + 1; i < live.size(); ++i) {
      if (live[i].name == "message.delta" && !expected.empty() && expected.back().name == "message.delta") {
        expected.back().id = live[i].id;
        expected.back().data.as_object()["text"] = str(expected.back().data.at("text")) + str(live[i].data.at("text"));
      } else {
        expected.push_back(live[i]);
      }
    }
    REQUIRE(rest.size() == expected.size());
    for (std::size_t i = 0; i < rest.size(); ++i) {
      CHECK(rest[i].name == expected[i].name);
      CHECK(rest[i].id == expected[i].id);
      if (rest[i].name == "message.completed")
        CHECK(rest[i].data.at("answer") == expected[i].data.at("answer"));
      else
        CHECK(rest[i].data == expected[i].data);
    }
  }
  SECTION("after the last event, nothing follows") { CHECK(resumed(live.back().id).empty()); }
  SECTION("without a Last-Event-ID, the conversation's last turn, the conversation event first") {
    const auto all = resumed(std::nullopt);
    REQUIRE(all.size() == 3);
    CHECK(all[0].name == "conversation");
    CHECK(all[0].id == 0);
    CHECK(all[1].data.at("text") == "echo: a later turn");
    CHECK(all[2].id > live.back().id);
  }
  f.server->drain();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}

TEST_CASE("serve: a streaming client that goes away") {
  serve_fixture f;
  const auto alice = as_user(alice_key);
  SECTION("does not cancel the turn: it completes and is stored") {
    std::string conversation;
    {
      open_turn t(f.port(), chat("c1"), "helper", "hold-gone", alice);
      conversation = t.conversation_id;
      REQUIRE(f.model->wait_held("hold-gone"));
      t.client.close();
    }
    REQUIRE(f.counter->wait_closed(1));  // the server noticed
    REQUIRE(f.model->release("hold-gone"));
    REQUIRE(f.counter->wait_turns(1));
    const json::value conv = f.client().send(http::verb::get, "/v1/conversations/" + conversation, "", alice).json();
    CHECK(conv.at("messages").at(1).at("content") == "done: hold-gone");
  }
  SECTION("cancels the turn when the agent's policy says so") {
    std::string conversation;
    {
      open_turn t(f.port(), chat("c1"), "urgent", "hold-cancel", alice);
      conversation = t.conversation_id;
      REQUIRE(f.model->wait_held("hold-cancel"));
      t.client.close();
    }
    CHECK(f.model->wait_cancelled("hold-cancel"));
    REQUIRE(f.counter->wait_turns(1));
    const json::value trace =
        f.client().send(http::verb::get, "/v1/conversations/" + conversation + "/trace", "", alice).json();
    CHECK(trace.at("entries").as_array().back().at("kind") == "error");
    CHECK(trace.at("entries").as_array().back().at("payload").at("type") == "cancelled");
  }
}

TEST_CASE("serve: a streaming client that reads too slowly") {
  serve_fixture f("memory:", "", "max_stream_backlog_bytes = 65536\n");
  const auto alice = as_user(alice_key);
  SECTION("is dropped, and with the cancel policy its turn is cancelled saying why") {
    // The client reads the head and the first event, then nothing more.
    open_turn t(f.port(), chat("c1"), "urgent", "hold-firehose", alice);
    CHECK(f.model->wait_cancelled("hold-firehose"));
    REQUIRE(f.counter->wait_turns(1));
    const json::value trace =
        f.client().send(http::verb::get, "/v1/conversations/" + t.conversation_id + "/trace", "", alice).json();
    const json::value& last = trace.at("entries").as_array().back();
    CHECK(last.at("payload").at("type") == "cancelled");
    CHECK(str(last.at("payload").at("message")).find("too slowly") != std::string::npos);
  }
}

// The bound: another user's turn waits for none of the flood's turns. Bob's
// turn completes while every one of alice's 40 turns (30 holding a model
// call on 30 chats, 10 queued behind one of them) is still unfinished.
TEST_CASE("serve: one user's flood does not hold up another user's turn") {
  serve_fixture f;
  const auto alice = as_user(alice_key);
  std::vector<std::unique_ptr<open_turn>> flood;
  for (int i = 0; i < 30; ++i)
    flood.push_back(
        std::make_unique<open_turn>(f.port(), chat("flood-" + std::to_string(i)), "helper", "hold-flood", alice));
  for (int i = 0; i < 10; ++i)
    flood.push_back(
        std::make_unique<open_turn>(f.port(), chat("flood-0"), "helper", "queued " + std::to_string(i), alice));
  REQUIRE(f.model->wait_held("hold-flood", 30));

  const http_reply bob =
      f.client().send(http::verb::post, chat("c1"), message_body("helper", "my turn"), as_user(bob_key));
  CHECK(bob.status == 200);
  CHECK(bob.json().at("answer") == "echo: my turn");
  CHECK(f.server->turns().unfinished_count() == 40);
  CHECK(f.model->held_now() == 30);

  for (int i = 0; i < 30; ++i) f.model->release("hold-flood");
  for (auto& t : flood) CHECK(t->client.rest_of_stream().back().name == "message.completed");
}

TEST_CASE("serve: a caller's traceparent is continued, not replaced") {
  serve_fixture f;
  http_client c = f.client();
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const http_reply r = c.send(http::verb::post, chat("c-traced"), message_body("helper", "hi"),
                              as_user(alice_key, {{"traceparent", "00-" + trace_id + "-00f067aa0ba902b7-01"}}));
  REQUIRE(r.status == 200);
  // The model call is made in the caller's trace.
  CHECK(f.model->last_traceparent().substr(3, 32) == trace_id);
}

TEST_CASE("serve: a stream the model is silent on") {
  serve_fixture f("memory:", "", "stream_heartbeat_seconds = 0.1\n");
  SECTION("gets SSE comment lines every stream_heartbeat, so proxies keep it open") {
    open_turn t(f.port(), chat("c1"), "helper", "hold-beat", as_user(alice_key));
    REQUIRE(f.model->wait_held("hold-beat"));
    // Should no heartbeat come, the turn is ended after a while, so the read below ends too.
    std::mutex m;
    std::condition_variable cv;
    bool seen = false;
    auto watchdog = std::async(std::launch::async, [&] {
      std::unique_lock lock(m);
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen; })) f.model->release("hold-beat");
    });
    bool heartbeat = false;
    while (auto e = t.client.next_event())
      if (e->name.empty() && e->data.is_null()) {
        heartbeat = true;
        break;
      }
    {
      std::lock_guard lock(m);
      seen = true;
    }
    cv.notify_all();
    watchdog.get();
    CHECK(heartbeat);
    f.model->release("hold-beat");
  }
}

TEST_CASE("serve: a turn cut by a shutdown runs when its Idempotency-Key is retried") {
  sqlite_file db("troupe-serve-cut");
  const std::string store = "sqlite:" + db.path.string();
  const auto with_key = as_user(alice_key, {{"Idempotency-Key", "cut-by-shutdown"}});
  {
    serve_fixture f(store, "drain_deadline_seconds = 0.1\n");
    http_client live = f.client();
    live.open_stream(chat("c1"), message_body("helper", "hold-cut"), with_key);
    REQUIRE(live.next_event()->name == "conversation");
    REQUIRE(f.model->wait_held("hold-cut"));
    f.server->drain();
    const auto ended = live.rest_of_stream();
    REQUIRE_FALSE(ended.empty());
    // The live client is told to come back.
    CHECK(ended.back().data.at("error").at("type") == "shutdown");
  }
  serve_fixture f(store);
  http_client again = f.client();
  again.open_stream(chat("c1"), message_body("helper", "hold-cut"), with_key);
  REQUIRE(f.model->wait_held("hold-cut"));  // run again, not answered from the thread
  REQUIRE(f.model->release("hold-cut"));
  const auto events = again.rest_of_stream();
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().name == "message.completed");
  CHECK(events.back().data.at("answer") == "done: hold-cut");
  // A later retry gets that answer, without running it a third time.
  http_client later = f.client();
  const json::value replayed =
      later.send(http::verb::post, chat("c1"), message_body("helper", "hold-cut"), with_key).json();
  CHECK(replayed.at("answer") == "done: hold-cut");
  CHECK(f.model->calls() == 1);
  f.server->drain();
}
