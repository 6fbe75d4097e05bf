// Feeds long random signal sequences to the machine — sensible ones, stale
// ones, duplicates and nonsense — and checks after every step the invariants
// every later layer relies on.

#include "support/react_harness.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// A tool call is identified by the model call that asked for it and its id.
using call_key = std::pair<std::string, std::string>;

call_key key_of(const entry& e) {
  return {std::string(string_field(e.refs, "call_id").value_or("")),
          std::string(string_field(e.refs, "tool_call_id").value_or(""))};
}

class fuzzer {
 public:
  explicit fuzzer(std::uint32_t seed) : rng_(seed) {}

  void run(int steps) {
    for (int i = 0; i < steps; ++i) step_once(next_signal());
    check_whole_thread();
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  tool_call random_call(int i) {
    static const char* names[] = {"search", "lookup", "missing"};
    tool_call c = call(pick(6) == 0 ? "" : "tc" + std::to_string(pick(4) + i), names[pick(3)], {{"i", i}});
    if (pick(8) == 0) c.invalid_arguments = "{oops";
    return c;
  }

  signal next_signal() {
    const react_state& s = h_.state();
    // Mostly model and tool results, so requests run several iterations deep;
    // now and then a new query, a stray delta or a cancel.
    switch (pick(12)) {
      case 0: {
        // New request (or a busy one).
        query q{"r" + std::to_string(++requests_), "t", pick(10) ? "question" : " ", {}};
        if (pick(4) == 0) q.overrides.max_iterations = 1 + pick(3);
        return q;
      }
      case 1:
        return llm_delta{pick(4) ? s.call_id : "stale", "x", ""};
      case 2:
      case 3: {
        const std::string call_id = pick(6) ? s.call_id : "stale";
        switch (pick(4)) {
          case 0:
            return answer(call_id, "done", token_usage{pick(5), pick(5)});
          case 1:
            return llm_result{call_id, error_info{"server", "boom", 500, 1, {}}};
          default: {
            std::vector<tool_call> calls;
            for (int i = 0, n = 1 + pick(4); i < n; ++i) calls.push_back(random_call(i));
            return wants_tools(call_id, std::move(calls));
          }
        }
      }
      case 4:
      case 5:
      case 6:
      case 7:
      case 8:
      case 9:
      case 10: {
        if (s.tool_calls.empty() || pick(8) == 0) return tool_result{s.call_id, "nobody", "search", json::value(1)};
        const pending_tool_call& p = s.tool_calls[pick(static_cast<int>(s.tool_calls.size()))];
        if (pick(3) == 0)
          return tool_result{s.call_id, p.call.id, p.call.name, error_info::of(error_type::tool_failed, "it broke")};
        return tool_result{s.call_id, p.call.id, p.call.name, json::value(pick(100))};
      }
      default:
        return cancel{pick(4) ? s.request_id : "other", "stop"};
    }
  }

  void step_once(const signal& input) {
    const react_state before = h_.state();
    const std::size_t size_before = h_.history().size();
    const auto directives = h_.feed(input);
    const react_state& after = h_.state();
    const thread& t = h_.history();

    // A delta taken in place (as the agent takes it) is the step on it.
    if (const auto* d = std::get_if<llm_delta>(&input)) {
      react_state absorbed = before;
      absorb_delta(absorbed, *d);
      REQUIRE(absorbed == after);
      REQUIRE(directives.empty());
      REQUIRE(t.size() == size_before);
    }

    // seq stays contiguous; the committed entries are the new tail.
    REQUIRE(h_.last.committed.size() == t.size() - size_before);
    for (std::size_t i = size_before; i < t.size(); ++i) {
      const entry& e = *t.at_seq(i);
      REQUIRE(e.seq == i);
      if (e.kind == entry_kind::tool_call) ++calls_[key_of(e)];
      if (e.kind == entry_kind::tool_result) {
        REQUIRE(calls_.count(key_of(e)) == 1);  // never a result without its call
        ++results_[key_of(e)];
      }
    }

    // Outside awaiting_tools every call has exactly one result; while waiting,
    // exactly the calls pending in the state lack one.
    std::set<call_key> unanswered;
    for (const auto& [k, n] : calls_) {
      REQUIRE(n == 1);
      REQUIRE(results_[k] <= 1);
      if (results_[k] == 0) unanswered.insert(k);
    }
    if (after.status != react_status::awaiting_tools) {
      REQUIRE(unanswered.empty());
    } else {
      for (const pending_tool_call& p : after.tool_calls) unanswered.erase({after.call_id, p.call.id});
      REQUIRE(unanswered.empty());
    }

    // No directive refers to a call the machine does not know.
    for (const directive& d : directives) {
      if (const auto* x = std::get_if<llm_stream>(&d)) {
        REQUIRE(x->call_id == after.call_id);
        REQUIRE(after.status == react_status::awaiting_llm);
        check_projection(x->messages);
      } else if (const auto* x = std::get_if<tool_exec>(&d)) {
        REQUIRE(calls_.count({x->call_id, x->tool_call_id}) == 1);
        REQUIRE(x->request_id == after.request_id);
      } else if (const auto* x = std::get_if<cancel_call>(&d)) {
        REQUIRE(x->call_id == before.call_id);
        if (!x->tool_call_id.empty()) REQUIRE(calls_.count({x->call_id, x->tool_call_id}) == 1);
      } else if (const auto* x = std::get_if<reply>(&d)) {
        REQUIRE(x->request_id == before.request_id);
        REQUIRE(before.busy());
        REQUIRE(!after.busy());
        ++replies_;
      }
    }
    // Each request that started has exactly one reply once it is over.
    if (!before.busy() && after.busy()) ++started_;
    REQUIRE(started_ == replies_ + (after.busy() ? 1 : 0));
  }

  // Every tool message answers a tool call announced earlier in the context.
  static void check_projection(const message_list& messages) {
    std::set<std::string> announced;
    for (const llm_message& m : messages) {
      for (const tool_call& c : m.tool_calls) announced.insert(c.id);
      if (m.role == "tool") REQUIRE(announced.count(m.tool_call_id) == 1);
    }
  }

  void check_whole_thread() {
    const thread& t = h_.history();
    std::uint64_t seq = 0;
    for (const entry& e : t.entries()) REQUIRE(e.seq == seq++);
    REQUIRE(t.rev() == t.size());
  }

  std::mt19937 rng_;
  harness h_;
  int requests_ = 0;
  int started_ = 0;
  int replies_ = 0;
  std::map<call_key, int> calls_;
  std::map<call_key, int> results_;
};

}  // namespace

TEST_CASE("random signal sequences keep the machine's invariants") {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    INFO("seed " << seed);
    fuzzer(seed).run(300);
  }
}
