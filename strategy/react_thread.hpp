#pragma once
// A thread together with its ReAct machine state: the unit an agent owns per
// conversation. apply() runs one step and commits its entries to the thread
// before returning the directives, so whoever executes the directives sees a
// thread that already records why they exist (commit before effect). A
// durable owner writes `committed` to its store before dispatching.

#include "strategy/react_machine.hpp"

#include <optional>

namespace troupe {

struct applied {
  entry_range committed;              // the entries this step appended
  std::vector<directive> directives;  // to execute, in order
};

class react_thread {
 public:
  explicit react_thread(thread t, react_state s = {}) : thread_(std::move(t)), state_(std::move(s)) {}

  applied apply(const react_config& config, const signal& input, std::int64_t now_ms, id_source& ids) {
    step_result r = step(config, state_, thread_, input, now_ms, ids);
    entry_range committed = thread_.append(std::move(r.entries), now_ms, ids);
    state_ = std::move(r.state);
    return {std::move(committed), std::move(r.directives)};
  }

  // A step computed but not taken: the thread and state it would leave, for
  // an owner that must store the new entries before anything changes (and
  // may wait for the store meanwhile). Nothing changes until adopt().
  struct prepared_step {
    std::optional<thread> next;  // the thread with the step's entries; none if it writes none
    react_state state;
    applied out;
    std::uint64_t rev_before = 0;
    bool writes() const { return next.has_value(); }
  };

  // `system_prompt` and `agent`: as for step().
  prepared_step prepare(const react_config& config, const signal& input, std::int64_t now_ms, id_source& ids,
                        std::optional<std::string_view> system_prompt = std::nullopt,
                        std::string_view agent = {}) const {
    step_result r = step(config, state_, thread_, input, now_ms, ids, system_prompt, agent);
    // Most steps (every streamed delta) write nothing: no copy of the thread for them.
    std::optional<thread> next;
    entry_range committed;
    if (!r.entries.empty()) {
      next.emplace(thread_);  // O(1): shares the storage
      committed = next->append(std::move(r.entries), now_ms, ids);
    }
    return prepared_step{std::move(next), std::move(r.state), applied{std::move(committed), std::move(r.directives)},
                         thread_.rev()};
  }

  // A streamed delta, taken in place (see absorb_delta): the same as a step
  // on it, which would write nothing, in time proportional to the delta alone.
  void absorb(const llm_delta& d) { absorb_delta(state_, d); }

  // Takes a prepared step (once its entries are stored): its directives are
  // the caller's to execute.
  std::vector<directive> adopt(prepared_step&& p) {
    if (p.next) thread_ = std::move(*p.next);
    state_ = std::move(p.state);
    return std::move(p.out.directives);
  }

  // The same as apply(), but `persist(thread, rev_before)` is shown the
  // thread as it would be and must store it; if it returns false, nothing
  // changes — the thread and the state stay as they were, consistent with
  // the store — and the result is empty.
  template <class Persist>
  std::optional<applied> apply(const react_config& config, const signal& input, std::int64_t now_ms, id_source& ids,
                               Persist&& persist) {
    prepared_step p = prepare(config, input, now_ms, ids);
    if (p.writes() && !persist(static_cast<const thread_view&>(*p.next), p.rev_before)) return std::nullopt;
    entry_range committed = std::move(p.out.committed);
    return applied{std::move(committed), adopt(std::move(p))};
  }

  // Ends the running request, if any, without a step: for failures outside
  // the strategy's world (a store that cannot be written). Nothing is committed.
  void abandon_request(error_info why) {
    if (!state_.busy()) return;
    state_.status = react_status::error;
    state_.error = std::move(why);
    state_.tool_calls.clear();
    state_.streamed_text.clear();
    state_.streamed_thinking.clear();
    state_.projection.value.reset();  // as when the machine ends a request (react_machine.cpp)
  }

  const thread& history() const { return thread_; }
  const react_state& state() const { return state_; }

 private:
  thread thread_;
  react_state state_;
};

}  // namespace troupe
