// What a finished turn keeps of its events: runs of deltas as one event,
// with a reader who saw part of a run still getting exactly the rest; and
// the finished turns the server keeps, bounded by count and by bytes.

#include "apps/serve/event_position.hpp"
#include "apps/serve/live_event_ids.hpp"
#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn.hpp"
#include "apps/serve/turn_json.hpp"
#include "apps/serve/turn_registry.hpp"
#include "thread/id_source.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::serve;
namespace json = boost::json;

namespace {

// A turn on a fresh thread: its question (seq 0), `deltas` deltas of one
// model call, a tool call (seq 1) that starts, the answer after it (its
// delta placed after the call, seq 1) and the end (seq 3).
std::shared_ptr<turn> finished_turn_of(const std::string& request_id, int deltas, std::size_t delta_bytes = 8) {
  auto t = std::make_shared<turn>(turn_ids{request_id, "conv", "thread", "agent", "alice", "hi", "", {}, {}, 0});
  t->push("conversation", json::object{{"request_id", request_id}}, 0);
  for (int i = 0; i < deltas; ++i)
    t->push("message.delta", json::object{{"text", std::string(delta_bytes - 1, 'a' + i % 26) + "|"}},
            event_id(0, (i + 1) * delta_bytes));
  t->push("tool.started", json::object{{"name", "calculator"}}, event_id(1, tool_offset(1, 0)));
  t->push("message.delta", json::object{{"text", "after the tool"}}, event_id(2, 14));
  t->finish(turn_result{reply{request_id, std::string("done"), {}, 1}, 0, true}, "message.completed",
            json::object{{"answer", "done"}}, event_id(3, 0));
  return t;
}

struct read_events {
  std::vector<sse_event> events;
  bool ended = false;
};

read_events read_after(turn& t, std::uint64_t after) {
  read_events out;
  t.subscribe(after, [&](const sse_event& e, bool last) {
    out.events.push_back(e);
    out.ended = last;
  });
  return out;
}

std::string text_of(const sse_event& e) { return std::string(json::parse(e.data).at("text").as_string()); }

}  // namespace

TEST_CASE("a finished turn keeps each run of deltas as one event") {
  auto t = finished_turn_of("r1", 100);
  std::string whole;
  for (int i = 0; i < 100; ++i) whole += std::string(7, 'a' + i % 26) + "|";

  SECTION("a reader from the start gets the run's whole text under its last delta's id") {
    const read_events r = read_after(*t, 0);
    REQUIRE(r.events.size() == 5);
    CHECK(r.events[0].name == "conversation");
    CHECK(r.events[0].id == 0);
    CHECK(r.events[1].name == "message.delta");
    CHECK(r.events[1].id == event_id(0, 800));
    CHECK(text_of(r.events[1]) == whole);
    CHECK(r.events[2].id == event_id(1, tool_offset(1, 0)));
    CHECK(text_of(r.events[3]) == "after the tool");
    CHECK(r.events[4].name == "message.completed");
    CHECK(r.ended);
  }
  SECTION("a reader who saw part of the run gets exactly the rest of it, and no conversation event") {
    const read_events r = read_after(*t, event_id(0, 40 * 8));
    REQUIRE(r.events.size() == 4);
    CHECK(r.events[0].id == event_id(0, 800));
    CHECK(text_of(r.events[0]) == whole.substr(40 * 8));
    CHECK(r.ended);
  }
  SECTION("a reader who saw the whole run gets what follows it") {
    const read_events r = read_after(*t, event_id(0, 800));
    REQUIRE(r.events.size() == 3);
    CHECK(r.events[0].id == event_id(1, tool_offset(1, 0)));
  }
  SECTION("a reader from an earlier turn's id gets all of it, the conversation event first") {
    const read_events r = read_after(*t, 5);
    REQUIRE(r.events.size() == 5);
    CHECK(r.events[0].name == "conversation");
  }
  SECTION("what it keeps is a fraction of the events it sent") { CHECK(t->kept_bytes() < 2 * whole.size() + 2'000); }
}

TEST_CASE("a running turn's tool ends are numbered in the order the model asked for the calls") {
  live_event_ids ids;
  const std::uint64_t a = ids.tool_started(4, "a"), b = ids.tool_started(4, "b");
  CHECK(a == event_id(4, tool_offset(1, 0)));
  CHECK(b == event_id(4, tool_offset(2, 0)));
  SECTION("an end that comes before an earlier call's is held for it") {
    CHECK(ids.tool_finished(4, "b", {{"name", "b"}}).empty());
    const auto told = ids.tool_finished(4, "a", {{"name", "a"}});
    REQUIRE(told.size() == 2);
    CHECK(told[0].data.at("name") == "a");
    CHECK(told[0].id == event_id(4, tool_offset(2, 1)));
    CHECK(told[1].data.at("name") == "b");
    CHECK(told[1].id == event_id(4, tool_offset(2, 2)));
  }
  SECTION("what is still held when the turn ends is told then, before the last event") {
    CHECK(ids.tool_finished(4, "b", {{"name", "b"}}).empty());
    const auto held = ids.held();
    REQUIRE(held.size() == 1);
    CHECK(held[0].id == event_id(4, tool_offset(2, 1)));
    CHECK(ids.last(7) == event_id(7, 0));
  }
  SECTION("the next model call's deltas count their bytes after the batch's results") {
    CHECK(ids.delta(7, 5) == event_id(7, 5));
    CHECK(ids.delta(7, 0) == 0);
    CHECK(ids.delta(7, 3) == event_id(7, 8));
  }
}

TEST_CASE("the finished turns kept are bounded by their bytes too") {
  const std::size_t one = finished_turn_of("probe", 200, 64)->kept_bytes();
  turn_registry turns(4096, 3 * one);
  for (int i = 0; i < 5; ++i) {
    const std::string id = "r" + std::to_string(i);
    auto t = finished_turn_of(id, 200, 64);
    auto admitted =
        turns.admit_turn(t->ids().conversation_id, id, "alice", double_texting::enqueue, 8, 8, [&] { return t; });
    REQUIRE(admitted.started == t);
    turns.finished(t);
    turns.keep(t);
  }
  CHECK(turns.finished_bytes() <= 3 * one);
  CHECK_FALSE(turns.by_request("r0"));
  CHECK_FALSE(turns.by_request("r1"));
  CHECK(turns.by_request("r4"));
}

// A turn whose end is not its request's (its node was lost) is forgotten:
// a repeat of its key finds nothing in memory and reads the thread again.
TEST_CASE("a finished turn forgotten is no longer found by its request or as its conversation's last") {
  turn_registry turns;
  auto t = finished_turn_of("lost", 200, 64);
  const std::string conversation = t->ids().conversation_id;
  REQUIRE(turns.admit_turn(conversation, "lost", "alice", double_texting::enqueue, 8, 8, [&] { return t; }).started ==
          t);
  turns.finished(t);
  REQUIRE(turns.by_request("lost") == t);
  REQUIRE(turns.current(conversation) == t);
  turns.forget(t);
  CHECK_FALSE(turns.by_request("lost"));
  CHECK_FALSE(turns.current(conversation));
  CHECK(turns.unfinished_count() == 0);
}

// A turn told from its entries numbers its events as they were numbered
// live: a tool call the agent refused without running (an unknown tool) had
// no events, so it has none here and the others' ids are unchanged.
TEST_CASE("a turn told from the store has its live ids, and no events for a call no tool ran") {
  thread t("th");
  sequential_ids ids;
  for (int i = 0; i < 10; ++i)
    t.append(entry_draft(message_payload{"user", "earlier", {}, {}, {}}, entry_refs::of("old", 1)), 1, ids);
  t.append({entry_draft(message_payload{"user", "q", {}, {}, {}}, entry_refs::of("r", 1)),
            entry_draft(tool_call_payload::of("nope", {}, std::nullopt), entry_refs::of("r", 1, "c1", "tc1")),
            entry_draft(tool_call_payload::of("calculator", {}, std::nullopt), entry_refs::of("r", 1, "c1", "tc2")),
            entry_draft(tool_result_payload::of(
                            "nope", error_info::of(error_type::unknown_tool, "there is no tool named \"nope\"")),
                        entry_refs::of("r", 1, "c1", "tc1")),
            entry_draft(tool_result_payload::of("calculator", json::value(5)), entry_refs::of("r", 1, "c1", "tc2")),
            entry_draft(message_payload{"assistant", "answer", {}, {}, {}}, entry_refs::of("r", 2, "c2"))},
           2, ids);
  std::vector<entry> of_r;
  for (const entry* e : t.with_ref("request_id", json::value("r"))) of_r.push_back(*e);
  const auto r = replay_turn(of_r, turn_ids{"r", "conv", "th", "agent", "alice", "", "", {}, {}, 0});
  REQUIRE(r);
  REQUIRE(r->result);
  std::vector<std::pair<std::string, std::uint64_t>> told;
  for (const sse_event& e : r->events) told.emplace_back(e.name, e.id);
  // The question is seq 10; the calls 11 and 12, their results 13 and 14, the answer 15.
  CHECK(told == std::vector<std::pair<std::string, std::uint64_t>>{{"conversation", 0},
                                                                   {"tool.started", event_id(12, tool_offset(1, 0))},
                                                                   {"tool.finished", event_id(12, tool_offset(1, 1))},
                                                                   {"message.delta", event_id(14, 6)},
                                                                   {"message.completed", event_id(15, 0)}});
  CHECK(json::parse(r->events[1].data).at("tool_call_id") == "tc2");
}

// The model asks for send (which waits for a person) and search (which runs)
// in one turn; search ends while the request waits; then send is approved,
// runs, and the model answers.
TEST_CASE("a paused turn told from the store: its pause has its live ids, and what its decisions added follows") {
  thread t("th");
  sequential_ids ids;
  auto refs = [](const char* tool_call_id, std::int64_t iteration = 1) {
    return entry_refs::of("r", iteration, "c1", tool_call_id);
  };
  t.append({entry_draft(message_payload{"user", "q", {}, {}, {}}, entry_refs::of("r", 1)),
            entry_draft(tool_call_payload::of("send", {{"to", "bob"}}, std::nullopt), refs("tc1")),
            entry_draft(
                std::string(entry_kind::approval_request),
                json::object{{"tool", "send"}, {"arguments", {{"to", "bob"}}}, {"reason", "mail"}, {"expires_at", 99}},
                refs("tc1")),
            entry_draft(tool_call_payload::of("search", {}, std::nullopt), refs("tc2"))},
           1, ids);
  auto told = [&] {
    std::vector<entry> of_r;
    for (const entry* e : t.with_ref("request_id", json::value("r"))) of_r.push_back(*e);
    auto r = replay_turn(of_r, turn_ids{"r", "conv", "th", "agent", "alice", "", "", {}, {}, 0});
    REQUIRE(r);
    return *r;
  };
  using named = std::vector<std::pair<std::string, std::uint64_t>>;
  auto names_and_ids = [](const replayed_turn& r) {
    named out;
    for (const sse_event& e : r.events) out.emplace_back(e.name, e.id);
    return out;
  };

  SECTION("paused: the free call's start, then the request, then the end at the batch's last offset") {
    const replayed_turn r = told();
    REQUIRE(r.result);
    REQUIRE(r.result->outcome.paused());
    CHECK(r.result->outcome.pending[0].tool_call_id == "tc1");
    CHECK(names_and_ids(r) == named{{"conversation", 0},
                                    {"tool.started", event_id(3, tool_offset(1, 0))},
                                    {"approval_request", event_id(3, tool_offset(2, 0))},
                                    {"error", event_id(3, max_offset)}});
    // As they were numbered live.
    live_event_ids live;
    CHECK(live.tool_started(3, "tc2") == r.events[1].id);
    CHECK(live.approval_requested(3) == r.events[2].id);
    CHECK(live.last(3, true) == r.events[3].id);
  }
  SECTION("decided and answered: each later event after its own entry, all past the pause") {
    t.append({entry_draft(tool_result_payload::of("search", json::value("found")), refs("tc2")),
              entry_draft(std::string(entry_kind::decision),
                          json::object{{"verdict", "approve"}, {"decided_by", "ada"}}, refs("tc1")),
              entry_draft(tool_result_payload::of("send", json::value("sent")), refs("tc1")),
              entry_draft(message_payload{"assistant", "answer", {}, {}, {}}, entry_refs::of("r", 2, "c2"))},
             2, ids);
    const replayed_turn r = told();
    REQUIRE(r.result);
    CHECK(r.result->outcome.ok());
    CHECK(names_and_ids(r) == named{{"conversation", 0},
                                    {"tool.started", event_id(3, tool_offset(1, 0))},
                                    {"approval_request", event_id(3, tool_offset(2, 0))},
                                    {"tool.finished", event_id(4, 0)},
                                    {"approval_decision", event_id(5, 0)},
                                    {"tool.started", event_id(5, 1)},
                                    {"tool.finished", event_id(6, 0)},
                                    {"message.delta", event_id(6, 6)},
                                    {"message.completed", event_id(7, 0)}});
    CHECK(json::parse(r.events[4].data).at("decided_by") == "ada");
    CHECK(json::parse(r.events[5].data).at("tool_call_id") == "tc1");
  }
}

TEST_CASE("a waiting call's JSON says where it waits when it is another agent's", "[serve][approvals]") {
  open_approval own{"c1", "send_email", json::object{{"to", "bob"}}, "sends mail", 1'000, false};
  SECTION("an agent's own call has no inner") {
    const json::object o = event_data("r1", own);
    CHECK(o.at("tool_call_id") == "c1");
    CHECK(o.at("request_id") == "r1");
    CHECK_FALSE(o.contains("inner"));
  }
  SECTION("a call of an agent used as a tool names that agent's thread, request and call") {
    open_approval relayed = own;
    relayed.tool_call_id = "o1/c1";
    relayed.inner = inner_approval{"mailer", "ada->mailer", "r7", "c1"};
    const json::object o = event_data("r1", relayed);
    CHECK(o.at("tool_call_id") == "o1/c1");
    CHECK(o.at("inner") ==
          json::value(json::object{
              {"agent_id", "mailer"}, {"thread_id", "ada->mailer"}, {"request_id", "r7"}, {"tool_call_id", "c1"}}));
  }
}
