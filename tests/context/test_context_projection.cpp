#include "context/projection.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/entry_builders.hpp"

#include <map>
#include <random>
#include <set>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// A random conversation: user questions, answers, parallel tool calls with
// their results, notes, and now and then a summary.
thread random_thread(std::mt19937& rng, std::size_t turns) {
  sequential_ids ids;
  thread t("t");
  std::uniform_int_distribution<int> pick(0, 9);
  int call = 0;
  for (std::size_t turn = 0; turn < turns; ++turn) {
    t.append(msg("user", "question " + std::to_string(turn) + std::string(pick(rng) * 10, 'q')), 1, ids);
    const int rounds = pick(rng) % 3;
    for (int r = 0; r < rounds; ++r) {
      const std::string cid = "c" + std::to_string(++call);
      if (pick(rng) < 3) t.append(msg("assistant", "let me look", cid), 1, ids);
      const int n = 1 + pick(rng) % 3;
      for (int k = 0; k < n; ++k) t.append(tcall(cid, cid + "-" + std::to_string(k)), 1, ids);
      if (pick(rng) == 0) t.append(entry_draft{"note", {{"text", "internal"}}, {}}, 1, ids);
      for (int k = 0; k < n; ++k)
        t.append(tresult(cid, cid + "-" + std::to_string(k), boost::json::value(std::string(10 + pick(rng) * 30, 'r'))),
                 1, ids);
    }
    t.append(msg("assistant", "answer " + std::to_string(turn) + std::string(pick(rng) * 20, 'a'),
                 "c" + std::to_string(++call)),
             1, ids);
    if (pick(rng) == 0 && t.size() > 4) t.append(summary_of(0, t.size() - 3, "what happened so far"), 1, ids);
  }
  return t;
}

// Every tool call has its results right after it, and every result its call.
void check_pairing(const message_list& messages) {
  std::set<std::string> open;
  for (const llm_message& m : messages) {
    if (m.role == "tool") {
      REQUIRE(open.count(m.tool_call_id) == 1);
      open.erase(m.tool_call_id);
    } else {
      REQUIRE(open.empty());  // results come before anything else
      for (const tool_call& c : m.tool_calls) open.insert(c.id);
    }
  }
  REQUIRE(open.empty());
}

}  // namespace

TEST_CASE("budgeted projections of random threads keep their invariants") {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    const thread t = random_thread(rng, 1 + rng() % 30);
    context_policy p;
    p.max_input_tokens = 300 + static_cast<std::int64_t>(rng() % 3000);
    p.reserve_output_tokens = 200;
    p.keep_last_turns = rng() % 5;
    p.max_messages = rng() % 3 == 0 ? 5 + rng() % 20 : 0;
    p.summaries = rng() % 4 == 0 ? summarization::none : summarization::use_existing;
    const projection out = project(t, p, {}, "system prompt");
    INFO("round " << round);

    // The system prompt always comes first.
    REQUIRE(out.messages.front().role == "system");
    REQUIRE(out.messages.front().content == "system prompt");
    // Calls and results travel together.
    check_pairing(out.messages);
    // Within budget, unless one unit alone is larger than it.
    if (!out.meta.oversized) REQUIRE(out.meta.estimated_tokens <= p.input_budget());
    if (p.max_messages && !out.meta.oversized) {
      std::size_t conversation = 0;
      for (const auto& m : out.messages) conversation += m.role != "system";
      REQUIRE(conversation <= p.max_messages);
    }
    // The kept entries are the newest ones, after the summary's boundary.
    const entry* s = p.summaries != summarization::none ? t.latest_summary() : nullptr;
    REQUIRE(out.meta.summary_used == (s != nullptr));
    const std::uint64_t boundary = s ? s->payload.at("to_seq").to_number<std::uint64_t>() + 1 : 0;
    if (out.meta.entries_included > 0) {
      // Walk back from the end: every included kind after the window start is in it.
      std::size_t conversation_entries = 0;
      for (std::size_t seq = t.size(); seq-- > boundary;) {
        const std::string& k = t.at_seq(seq)->kind;
        if (k != "note" && k != "summary") ++conversation_entries;
        if (conversation_entries == out.meta.entries_included) break;
      }
      REQUIRE(conversation_entries >= out.meta.entries_included);
    }
    REQUIRE(out.meta.basis_rev == t.rev());
  }
}

TEST_CASE("a projection that reuses an earlier one's units is the same as a fresh one") {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const thread t = random_thread(rng, 2 + rng() % 20);
    context_policy p;
    p.max_input_tokens = 500 + static_cast<std::int64_t>(rng() % 4000);
    p.reserve_output_tokens = 100;
    p.keep_last_turns = rng() % 4;
    // An earlier projection, of the thread as it was some entries ago.
    const thread earlier = *thread::restore(
        t.id(), t.size() / 2, 0, 0, {},
        std::vector<entry>(t.entries().begin(), t.entries().begin() + static_cast<std::ptrdiff_t>(t.size() / 2)));
    unit_cache cache, next;
    project(earlier, p, {}, "sys", nullptr, &cache);
    const projection reused = project(t, p, {}, "sys", &cache, &next);
    const projection fresh = project(t, p, {}, "sys");
    INFO("round " << round);
    REQUIRE(reused.messages == fresh.messages);
    REQUIRE(reused.meta == fresh.meta);
    // And again from the cache it left.
    REQUIRE(project(t, p, {}, "sys", &next).messages == fresh.messages);
  }
}

namespace {

// The thread's first `n` entries, as a thread of their own.
thread first_entries(const thread& t, std::size_t n) {
  return *thread::restore(
      t.id(), n, 0, 0, {},
      std::vector<entry>(t.entries().begin(), t.entries().begin() + static_cast<std::ptrdiff_t>(n)));
}

std::vector<entry_draft> as_drafts(const thread& t, std::size_t first, std::size_t last) {
  std::vector<entry_draft> drafts;
  for (std::size_t seq = first; seq < last; ++seq) {
    const entry& e = *t.at_seq(seq);
    drafts.push_back(entry_draft::of(std::string(std::string_view(e.kind)), e.payload, e.refs));
  }
  return drafts;
}

context_policy random_policy(std::mt19937& rng) {
  context_policy p;
  // Now and then a budget smaller than some units, so that the newest one goes alone.
  p.max_input_tokens =
      rng() % 4 == 0 ? 40 + static_cast<std::int64_t>(rng() % 150) : 300 + static_cast<std::int64_t>(rng() % 3000);
  p.reserve_output_tokens = rng() % 2 ? 0 : 30;
  p.keep_last_turns = rng() % 5;
  p.max_messages = rng() % 3 == 0 ? 1 + rng() % 20 : 0;
  const unsigned s = rng() % 4;
  p.summaries = s == 0 ? summarization::none : s == 1 ? summarization::request_new : summarization::use_existing;
  p.summarize_after_entries = rng() % 3 == 0 ? rng() % 10 : 0;
  if (rng() % 6 == 0) p.include_kinds = {"message", "tool_call", "tool_result", "note"};
  if (rng() % 8 == 0)
    p.include_kinds = {"tool_call", "tool_result", "note"};  // the assistant's words still join its calls
  return p;
}

}  // namespace

TEST_CASE("a projection that extends the window an earlier one left is the same as a fresh one") {
  // A thread projected as a machine projects it: each call sees what the
  // earlier ones committed, the earlier call's pending entries among it,
  // and entries of its own pending; now and then the policy or the system
  // prompt changes, and summaries move the boundary.
  std::mt19937 rng(23);
  int extensions = 0, oversized = 0;
  for (int round = 0; round < 300; ++round) {
    const thread whole = random_thread(rng, 2 + rng() % 25);
    context_policy p = random_policy(rng);
    std::string prompt = "system prompt";
    std::shared_ptr<const unit_cache> cache;
    std::size_t committed = rng() % 3;
    while (committed <= whole.size()) {
      const std::size_t pending = std::min<std::size_t>(whole.size() - committed, rng() % 3);
      const thread t = first_entries(whole, committed);
      const std::vector<entry_draft> drafts = as_drafts(whole, committed, committed + pending);
      auto next = std::make_shared<unit_cache>();
      const projection extended = project(t, p, drafts, prompt, cache.get(), next.get());
      const projection fresh = project(t, p, drafts, prompt);
      INFO("round " << round << ", " << committed << " committed, " << pending << " pending");
      REQUIRE(extended.messages == fresh.messages);
      REQUIRE(extended.meta == fresh.meta);
      extensions += next->extend_from->extended;
      oversized += fresh.meta.oversized;
      cache = next;
      committed += std::max<std::size_t>(1, pending + rng() % 3);
      if (rng() % 15 == 0) p = random_policy(rng);
      if (rng() % 15 == 0)
        prompt = rng() % 2 ? "system prompt" : "a longer system prompt, of more tokens than the other";
    }
  }
  // Both paths ran, and the rarer decisions too.
  REQUIRE(extensions > 1000);
  REQUIRE(oversized > 100);
}

TEST_CASE("an extended window decides on the earlier window's units without reading them again") {
  sequential_ids ids;
  thread t("t");
  for (int turn = 0; turn < 4; ++turn) {
    t.append(msg("user", "question " + std::to_string(turn)), 1, ids);
    t.append(msg("assistant", "answer " + std::to_string(turn), "c" + std::to_string(turn)), 1, ids);
  }
  context_policy p;
  p.keep_last_turns = 0;
  unit_cache cache;
  const projection earlier = project(t, p, {}, "sys", nullptr, &cache);
  REQUIRE(earlier.meta.entries_included == 8);
  REQUIRE(cache.units.size() == 8);
  REQUIRE(cache.extend_from);

  const std::vector<entry_draft> question{msg("user", "question 4")};
  SECTION("the units are the earlier projection's own messages") {
    const projection next = project(t, p, question, "sys", &cache);
    REQUIRE(next.messages.size() == 10);
    REQUIRE(next.messages == project(t, p, question, "sys").messages);
    const auto shared = next.messages.shared_from(1);  // after the system prompt
    for (std::size_t u = 0; u < 8; ++u) REQUIRE(shared[u] == cache.units[u]->messages.front());
  }
  SECTION("and their costs as stored: a stored unit made dear ends the window there") {
    // Only a window that extends the stored one sees the changed cost; a
    // walk of the thread would keep every unit.
    auto dear = std::make_shared<unit_cache::unit>(*cache.units[5]);
    dear->cost = p.input_budget();
    cache.units[5] = dear;
    const projection next = project(t, p, question, "sys", &cache);
    REQUIRE(next.messages.size() == 4);  // the system prompt, units 6 and 7, the question
    REQUIRE(next.meta.truncated);
    REQUIRE(next.meta.dropped_to_seq == 5);
  }
  SECTION("a thread whose newest entries are not the pending ones the cache saw is walked again") {
    unit_cache with_question;
    project(t, p, question, "sys", &cache, &with_question);
    thread other = t;
    other.append(msg("user", "question 5"), 1, ids);  // as long as "question 4", another text
    const projection next = project(other, p, {}, "sys", &with_question);
    REQUIRE(next.messages == project(other, p, {}, "sys").messages);
    REQUIRE(next.messages.back().content == "question 5");
  }
  SECTION("so is one whose pending tool result became another of the same size") {
    thread asked = t;
    asked.append(msg("user", "question 4"), 1, ids);
    asked.append(tcall("c9", "c9-0"), 1, ids);
    unit_cache with_result;
    project(asked, p, std::vector<entry_draft>{tresult("c9", "c9-0", json::value("12"))}, "sys", nullptr, &with_result);
    thread answered = asked;
    answered.append(tresult("c9", "c9-0", json::value("13")), 1, ids);
    const projection next = project(answered, p, {}, "sys", &with_result);
    REQUIRE(next.messages == project(answered, p, {}, "sys").messages);
    REQUIRE(next.messages.back().content == "13");
  }
  SECTION("a thread that is not the one the cache saw is walked again") {
    thread other("t");
    sequential_ids other_ids(100);
    for (int turn = 0; turn < 4; ++turn) {
      other.append(msg("user", "other question " + std::to_string(turn)), 1, other_ids);
      other.append(msg("assistant", "other answer " + std::to_string(turn), "c"), 1, other_ids);
    }
    REQUIRE(project(other, p, question, "sys", &cache).messages == project(other, p, question, "sys").messages);
  }
}

TEST_CASE("the newest unit goes alone when it is larger than the whole budget") {
  sequential_ids ids;
  thread t("t");
  t.append({msg("user", "old question"), msg("assistant", "old answer"), msg("user", std::string(8000, 'x'))}, 1, ids);
  context_policy p;
  p.max_input_tokens = 1000;
  p.reserve_output_tokens = 0;
  const projection out = project(t, p, {}, "");
  REQUIRE(out.messages.size() == 1);
  CHECK(out.messages[0].content.size() == 8000);
  CHECK(out.meta.oversized);
  CHECK(out.meta.truncated);
}

TEST_CASE("policy fields shape the projection") {
  sequential_ids ids;
  thread t("t");
  for (int i = 0; i < 6; ++i)
    t.append({msg("user", "q" + std::to_string(i)), msg("assistant", "a" + std::to_string(i))}, 1, ids);

  SECTION("keep_last_turns") {
    context_policy p;
    p.keep_last_turns = 2;
    const projection out = project(t, p, {}, "");
    REQUIRE(out.messages.size() == 4);
    CHECK(out.messages[0].content == "q4");
    CHECK(out.meta.truncated);
    CHECK(out.meta.entries_included == 4);
  }
  SECTION("the pending question counts as the newest turn") {
    context_policy p;
    p.keep_last_turns = 2;
    const std::vector<entry_draft> pending{msg("user", "q6")};
    const projection out = project(t, p, pending, "");
    REQUIRE(out.messages.size() == 3);
    CHECK(out.messages[0].content == "q5");
    CHECK(out.messages.back().content == "q6");
    CHECK(out.meta.pending_count == 1);
  }
  SECTION("max_messages") {
    context_policy p;
    p.keep_last_turns = 0;
    p.max_messages = 3;
    CHECK(project(t, p, {}, "").messages.size() == 3);
  }
  SECTION("max_input_tokens and reserve_output_tokens") {
    context_policy p;
    p.keep_last_turns = 0;
    p.max_input_tokens = 2 * 6;  // two messages of 6 tokens each (4 overhead + 2 text)
    p.reserve_output_tokens = 0;
    CHECK(project(t, p, {}, "").messages.size() == 2);
    p.reserve_output_tokens = 6;
    CHECK(project(t, p, {}, "").messages.size() == 1);
  }
  SECTION("include_kinds leaves out what is not listed") {
    t.append(entry_draft{"note", {{"content", "not for the model"}}, {}}, 1, ids);
    context_policy p;
    p.keep_last_turns = 0;
    for (const auto& m : project(t, p, {}, "").messages) CHECK(m.content != "not for the model");
  }
  SECTION("a summary replaces what it covers, as a system or a user message") {
    t.append(summary_of(0, 7, "the user asked q0..q3"), 1, ids);  // covers q0..a3
    context_policy p;
    p.keep_last_turns = 0;
    projection out = project(t, p, {}, "sys");
    REQUIRE(out.messages.size() == 1 + 1 + 4);
    CHECK(out.messages[1].role == "system");
    CHECK_THAT(out.messages[1].content, Catch::Contains("q0..q3"));
    CHECK(out.messages[2].content == "q4");
    CHECK(out.meta.summary_used);
    p.summary_as = summary_role::user;
    CHECK(project(t, p, {}, "sys").messages[1].role == "user");
    p.summaries = summarization::none;
    CHECK(project(t, p, {}, "sys").messages.size() == 1 + 12);
  }
  SECTION("needs_summary when summaries are requested and the window dropped something") {
    context_policy p;
    p.keep_last_turns = 2;
    p.summaries = summarization::request_new;
    CHECK(project(t, p, {}, "").meta.needs_summary);
    p.keep_last_turns = 0;
    CHECK(!project(t, p, {}, "").meta.needs_summary);
    p.summarize_after_entries = 10;
    CHECK(project(t, p, {}, "").meta.needs_summary);
  }
}

TEST_CASE("tool results that are still pending complete their unit") {
  sequential_ids ids;
  thread t("t");
  t.append({msg("user", "look it up"), tcall("c1", "a"), tcall("c1", "b")}, 1, ids);
  const std::vector<entry_draft> pending{tresult("c1", "a", boost::json::value(std::string(20, 'r'))),
                                         tresult("c1", "b", boost::json::value(std::string(20, 'r')))};
  context_policy p;
  p.max_input_tokens = 10;  // far too small: the pending unit is sent anyway
  p.reserve_output_tokens = 0;
  const projection out = project(t, p, pending, "");
  check_pairing(out.messages);
  REQUIRE(out.messages.size() == 3);
  CHECK(out.messages[0].tool_calls.size() == 2);
  CHECK(out.meta.oversized);
}

TEST_CASE("presets and resolution") {
  CHECK(context_policy{}.max_input_tokens == 8000);
  CHECK(context_policy{}.reserve_output_tokens == 2000);
  CHECK(context_policy{}.keep_last_turns == 3);
  CHECK(context_policy::short_context().max_input_tokens < context_policy{}.max_input_tokens);
  CHECK(context_policy::long_context().max_input_tokens > context_policy::tool_focused().max_input_tokens);
  CHECK(context_policy::for_model("openai:gpt-4o-mini").max_input_tokens == 128'000);
  CHECK(context_policy::for_model("claude-sonnet-4-5").max_input_tokens == 200'000);
  CHECK(context_policy::for_model("gpt-4").max_input_tokens == 8'192);
  CHECK(context_policy::for_model("some-local-model").max_input_tokens == 8000);

  context_overrides state;
  state.keep_last_turns = 7;
  state.max_input_tokens = 5000;
  context_overrides request;
  request.max_input_tokens = 3000;
  const context_policy p = resolve_policy(context_policy::tool_focused(), state, request);
  CHECK(p.max_input_tokens == 3000);                                                       // the request wins
  CHECK(p.keep_last_turns == 7);                                                           // then the agent's state
  CHECK(p.reserve_output_tokens == context_policy::tool_focused().reserve_output_tokens);  // then its config
  context_overrides summarize;
  summarize.summarize = true;
  CHECK(apply(context_policy{}, summarize).summaries == summarization::request_new);
  CHECK(context_policy{}.summarize_to == 0.5);
  summarize.summarize_to = 0.25;
  CHECK(apply(context_policy{}, summarize).summarize_to == 0.25);
}

TEST_CASE("entries carry their token estimate from the moment they are appended") {
  sequential_ids ids;
  thread t("t");
  const entry& e = t.append(msg("user", std::string(40, 'x')), 1, ids);
  CHECK(e.tokens == 4 + 10);
}
