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

  // The same, but `persist(thread, rev_before)` is shown the thread as it
  // would be and must store it; if it returns false, nothing changes — the
  // thread and the state stay as they were, consistent with the store — and
  // the result is empty.
  template <class Persist>
  std::optional<applied> apply(const react_config& config, const signal& input, std::int64_t now_ms, id_source& ids,
                               Persist&& persist) {
    step_result r = step(config, state_, thread_, input, now_ms, ids);
    if (r.entries.empty()) {
      state_ = std::move(r.state);
      return applied{{}, std::move(r.directives)};
    }
    thread next = thread_;  // O(1): shares the storage
    entry_range committed = next.append(std::move(r.entries), now_ms, ids);
    if (!persist(static_cast<const thread_view&>(next), thread_.rev())) return std::nullopt;
    thread_ = std::move(next);
    state_ = std::move(r.state);
    return applied{std::move(committed), std::move(r.directives)};
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
  }

  const thread& history() const { return thread_; }
  const react_state& state() const { return state_; }

 private:
  thread thread_;
  react_state state_;
};

}  // namespace troupe
