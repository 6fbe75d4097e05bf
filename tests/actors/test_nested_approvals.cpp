// Approvals inside an agent used as a tool: the inner agent's pause surfaces
// on the outer request, and a decision posted to the outer agent flows down
// to the inner one, which goes on from its tool call.

#include "support/runtime_harness.hpp"

#include "runtime/store/sqlite/sqlite_store.hpp"
#include "strategy/approvals.hpp"
#include "support/sqlite_file.hpp"

#include <atomic>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// Asked anything, the model makes the call; shown its result, it answers
// with it after `prefix`.
std::shared_ptr<scripted_provider> calls_then_answers(tool_call first, std::string prefix) {
  return std::make_shared<scripted_provider>([first, prefix](const llm_stream& s) {
    if (const llm_message& last = s.messages.back(); last.role == "tool")
      return scripted_reply::text(prefix + last.content);
    return scripted_reply::tools({first});
  });
}

// Two agents on one runtime: "a" uses "b" as its tool ask_b, and b's send
// needs approval. Counts the sends.
struct nested {
  // a asks b; b sends to bob.
  std::shared_ptr<scripted_provider> outer =
                                         calls_then_answers(call("o1", "ask_b", {{"question", "mail bob"}}), "outer: "),
                                     inner = calls_then_answers(call("s2", "send", {{"to", "bob"}}), "inner: ");
  std::atomic<int> sends{0};

  void set_up(runtime& rt, std::int64_t timeout_ms = 3'600'000) {
    rt.tools().add(counted_send(sends));
    rt.add_agent_tool("ask_b", "b", "Asks b.");
    agent_spec b{.id = "b", .model = "m", .tools = {"send"}};
    b.provider = inner;
    b.approvals["send"] = approval_rule{approval_mode::always, {}, "sends an email", timeout_ms, verdict::reject};
    agent_spec a{.id = "a", .model = "m", .tools = {"ask_b"}};
    a.provider = outer;
    rt.spawn_agents({std::move(b), std::move(a)});
  }
};

constexpr const char* inner_thread = "a->b";

decision to_outer(verdict v, std::string tool_call_id = "o1/s2") {
  decision d;
  d.request_id = "rA";
  d.tool_call_id = std::move(tool_call_id);
  d.answer = v;
  d.decided_by = "ada";
  return d;
}

const entry* only(const std::vector<const entry*>& entries) { return entries.size() == 1 ? entries[0] : nullptr; }

// The outer request paused on the inner agent's call: what its user sees.
void check_surfaced(const reply& paused) {
  REQUIRE(paused.paused());
  REQUIRE(paused.pending.size() == 1);
  const open_approval& call = paused.pending[0];
  CHECK(call.tool_call_id == "o1/s2");
  CHECK(call.tool == "send");
  CHECK(call.arguments == json::object{{"to", "bob"}});
  CHECK(call.reason == "sends an email");
  REQUIRE(call.inner);
  CHECK(call.inner->agent_id == "b");
  CHECK(call.inner->thread_id == inner_thread);
  CHECK(call.inner->tool_call_id == "s2");
  CHECK(!call.inner->request_id.empty());
}

}  // namespace

TEST_CASE("an approval inside an agent used as a tool surfaces on the outer request, and the decision flows down") {
  nested n;
  runtime rt({.provider = n.outer});
  n.set_up(rt);
  agent a = *rt.find_agent("a"), b = *rt.find_agent("b");

  const request r = a.ask("mail bob via b", {.request_id = "rA"});
  const reply paused = must_reply(r);
  check_surfaced(paused);
  CHECK(r.pending() == paused.pending);
  // The outer call stays open: neither finished nor failed.
  const auto outer_thread = a.snapshot();
  REQUIRE(outer_thread);
  CHECK(outer_thread->of_kind(entry_kind::tool_result).empty());
  const entry* asked = only(outer_thread->of_kind(entry_kind::approval_request));
  REQUIRE(asked);
  const auto relayed = relayed_to(*asked);
  REQUIRE(relayed);
  CHECK(relayed->inner == *paused.pending[0].inner);
  CHECK(relayed->outer_tool_call_id == "o1");
  // The inner request paused in its own thread.
  const auto paused_inner = b.snapshot(inner_thread);
  REQUIRE(paused_inner);
  CHECK(pending_approvals(*paused_inner, paused.pending[0].inner->request_id).size() == 1);
  CHECK(n.sends == 0);

  SECTION("approve: the inner call runs once, and the inner answer is the outer call's result") {
    const reply done = must_reply(a.decide(to_outer(verdict::approve)));
    CHECK(answer_of(done) == "outer: inner: sent to bob");
    CHECK(n.sends == 1);
    // Neither model call that asked for a tool was made again.
    CHECK(n.outer->calls() == 2);
    CHECK(n.inner->calls() == 2);
    const auto t = b.snapshot(inner_thread);
    REQUIRE(t);
    const entry* decided = only(t->of_kind(entry_kind::decision));
    REQUIRE(decided);
    CHECK(decided->payload.string("decided_by") == "ada");
    CHECK(decided->payload.string("verdict") == "approve");
    CHECK(decided->refs.tool_call_id() == "s2");
    const auto outer = a.snapshot();
    REQUIRE(outer);
    CHECK(every_call_answered(*outer));
    CHECK(open_approval_requests(*outer).empty());
  }
  SECTION("reject: the inner model reads the rejection, and the call never runs") {
    decision d = to_outer(verdict::reject);
    d.message = "not to bob";
    CHECK(answer_of(must_reply(a.decide(d))) ==
          R"(outer: inner: {"error":{"type":"rejected","message":"not to bob"}})");
    CHECK(n.sends == 0);
  }
  SECTION("edit: the arguments are validated against the inner tool's schema") {
    decision d = to_outer(verdict::edit);
    d.arguments = {{"to", 5}};
    CHECK_THAT(answer_of(must_reply(a.decide(d))), Catch::Contains("invalid_arguments"));
    CHECK(n.sends == 0);
  }
  SECTION("edit with arguments that fit: the inner call runs with them") {
    decision d = to_outer(verdict::edit);
    d.arguments = {{"to", "carol"}};
    CHECK(answer_of(must_reply(a.decide(d))) == "outer: inner: sent to carol");
    CHECK(n.sends == 1);
  }
  SECTION("sticky: the inner agent's later calls of the tool run without asking") {
    decision d = to_outer(verdict::approve);
    d.sticky = true;
    CHECK(answer_of(must_reply(a.decide(d))) == "outer: inner: sent to bob");
    CHECK(answer_of(must_reply(a.ask("again"))) == "outer: inner: sent to bob");
    CHECK(n.sends == 2);
  }
  SECTION("a decision for an inner call that does not wait is a typed error, and the pause stays") {
    CHECK(error_type_of(must_reply(a.decide(to_outer(verdict::approve, "o1/nope")))) == error_type::not_found);
    CHECK(answer_of(must_reply(a.decide(to_outer(verdict::approve)))) == "outer: inner: sent to bob");
    SECTION("and once taken, a decision for it again is refused as already decided") {
      CHECK(error_type_of(must_reply(a.decide(to_outer(verdict::reject)))) == error_type::already_decided);
    }
  }
  SECTION("an inner request that is gone: the decision's outcome there is a typed error the outer model reads") {
    // Someone decided the inner call on b directly; b's request went on and ended.
    decision direct;
    direct.request_id = paused.pending[0].inner->request_id;
    direct.tool_call_id = "s2";
    direct.answer = verdict::reject;
    direct.decided_by = "bea";
    CHECK(answer_of(must_reply(b.decide(direct, {.thread_id = inner_thread}))) ==
          R"(inner: {"error":{"type":"rejected","message":"a person rejected the call"}})");
    const std::string answer = answer_of(must_reply(a.decide(to_outer(verdict::approve))));
    CHECK_THAT(answer, Catch::StartsWith(R"(outer: {"error":{"type":"already_decided")"));
    CHECK(n.sends == 0);
  }
  SECTION("cancel: the outer request ends, and so does the inner paused one") {
    r.cancel("nobody will decide");
    CHECK(eventually([&] {
      const auto end = r.await(std::chrono::milliseconds(0));
      return end && !end->paused() && error_type_of(*end) == error_type::cancelled;
    }));
    CHECK(eventually([&] {
      const auto t = b.snapshot(inner_thread);
      return t && t->of_kind(entry_kind::error).size() == 1 && every_call_answered(*t);
    }));
    const auto t = b.snapshot(inner_thread);
    REQUIRE(t);
    const entry* decided = only(t->of_kind(entry_kind::decision));
    REQUIRE(decided);
    CHECK(decided->payload.string("decided_by") == "cancel");
    CHECK(n.sends == 0);
    CHECK(error_type_of(must_reply(a.decide(to_outer(verdict::approve)))) == error_type::already_decided);
  }
}

TEST_CASE(
    "an inner pause nobody decides takes the inner rule's default at its deadline, and the outer request goes on") {
  nested n;
  runtime rt({.provider = n.outer});
  n.set_up(rt, 300);
  agent a = *rt.find_agent("a");
  check_surfaced(must_reply(a.ask("mail bob via b", {.request_id = "rA"})));
  CHECK(eventually([&] {
    const auto t = a.snapshot();
    return t &&
           t->last_assistant_text() ==
               std::optional<std::string>(
                   R"(outer: inner: {"error":{"type":"expired","message":"no decision came before the deadline"}})");
  }));
  CHECK(n.sends == 0);
}

TEST_CASE("an inner pause outlives its runtime: after a restart a decision to the outer agent reaches the inner one") {
  sqlite_file file("troupe-nested-approvals");
  auto open = [&] { return std::make_shared<sqlite_store>(file.path.string()); };
  std::atomic<int> sends{0};
  std::string inner_request;
  {
    nested first;
    runtime rt({.provider = first.outer, .store = open()});
    first.set_up(rt);
    const reply paused = must_reply(rt.find_agent("a")->ask("mail bob via b", {.request_id = "rA"}));
    check_surfaced(paused);
    inner_request = paused.pending[0].inner->request_id;
    CHECK(first.outer->calls() == 1);
    CHECK(first.inner->calls() == 1);
    sends += first.sends.load();
  }
  nested second;
  runtime rt({.provider = second.outer, .store = open()});
  second.set_up(rt);
  agent a = *rt.find_agent("a"), b = *rt.find_agent("b");
  decision d = to_outer(verdict::approve);
  d.idempotency_key = "k1";
  CHECK(answer_of(must_reply(a.decide(d))) == "outer: inner: sent to bob");
  sends += second.sends.load();
  // Each tool ran once over both runtimes, and no model call was made again.
  CHECK(sends == 1);
  CHECK(second.outer->calls() == 1);
  CHECK(second.inner->calls() == 1);
  const auto t = b.snapshot(inner_thread);
  REQUIRE(t);
  CHECK(every_call_answered(*t));
  const entry* decided = only(t->of_kind(entry_kind::decision));
  REQUIRE(decided);
  CHECK(decided->refs.request_id() == inner_request);
  CHECK(decided->payload.string("decided_by") == "ada");
  const auto outer = a.snapshot();
  REQUIRE(outer);
  CHECK(every_call_answered(*outer));
  CHECK(outer->of_kind(entry_kind::tool_result).size() == 1);
}

TEST_CASE("the outer request's subscriber sees the inner call's pause as a direct one's, and no end of the call") {
  nested n;
  runtime rt({.provider = n.outer});
  n.set_up(rt);
  std::mutex m;
  std::vector<approval_requested_event> asked;
  int finished_tools = 0;
  ask_options o{.request_id = "rA"};
  o.on_event = [&](const stream_event& e) {
    std::lock_guard lock(m);
    if (const auto* a = std::get_if<approval_requested_event>(&e)) asked.push_back(*a);
    finished_tools += std::holds_alternative<tool_finished_event>(e);
  };
  const reply paused = must_reply(rt.find_agent("a")->ask("mail bob via b", std::move(o)));
  check_surfaced(paused);
  std::lock_guard lock(m);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].request_id == "rA");
  CHECK(asked[0].pending == paused.pending);
  CHECK(finished_tools == 0);  // the call to b has not finished
}
