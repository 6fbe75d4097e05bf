#pragma once
// A thread together with its ReAct machine state: the unit an agent owns per
// conversation. apply() runs one step and commits its entries to the thread
// before returning the directives, so whoever executes the directives sees a
// thread that already records why they exist (commit before effect). A
// durable owner writes `committed` to its store before dispatching.

#include "strategy/react_machine.hpp"

namespace troupe {

struct applied {
  entry_range committed;              // the entries this step appended
  std::vector<directive> directives;  // to execute, in order
};

class react_thread {
 public:
  explicit react_thread(thread t, react_state s = {}) : thread_(std::move(t)), state_(std::move(s)) {}

  applied apply(const react_config& config, const signal& input, std::int64_t now_ms,
                id_source& ids) {
    step_result r = step(config, state_, thread_, input, now_ms, ids);
    entry_range committed = thread_.append(std::move(r.entries), now_ms, ids);
    state_ = std::move(r.state);
    return {std::move(committed), std::move(r.directives)};
  }

  const thread& history() const { return thread_; }
  const react_state& state() const { return state_; }

 private:
  thread thread_;
  react_state state_;
};

}  // namespace troupe
