#pragma once
// The ReAct strategy as a pure function. Given the agent's configuration, the
// machine state of a thread, the thread as committed so far and one signal,
// step() returns the next state, the entries to commit to the thread, and the
// directives for the runtime to execute — in that order of business: the
// caller commits the entries before it lets any directive out.
//
// No clock, no randomness, no I/O: the time and the id source are inputs, so
// the same inputs give the same outputs and a thread can be replayed.

#include "directives/directive.hpp"
#include "signals/signal.hpp"
#include "strategy/react_config.hpp"
#include "strategy/react_state.hpp"
#include "thread/entry.hpp"
#include "thread/id_source.hpp"
#include "thread/thread.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace troupe {

struct step_result {
  react_state state;
  std::vector<entry_draft> entries;
  std::vector<directive> directives;
};

// `system_prompt`, when given, stands for the config's own: agents that
// differ only in their prompts (a simulation's personas) share one config,
// and each passes its prompt here. `agent`, when given, is recorded in each
// approval_request entry: the agent whose rules decide the call's default,
// so that a runtime restarted finds its pauses (thread_store::open_pauses).
step_result step(const react_config& config, const react_state& state, const thread_view& thread, const signal& input,
                 std::int64_t now_ms, id_source& ids, std::optional<std::string_view> system_prompt = std::nullopt,
                 std::string_view agent = {});

// What step() does with a streamed delta, done to `state` in place: a delta
// only grows the stream buffers and writes no entry and no directive, so an
// owner may take it without a step (which copies the state, and with it the
// text streamed so far: quadratic over a long answer). False if the delta is
// stale (another call's, or none awaited) and changed nothing.
bool absorb_delta(react_state& state, const llm_delta& d);

// Whether a tool call's error is step()'s own refusal, given without asking
// any executor (a tool the agent does not have, arguments that are not an
// object): no tool ran, so nobody saw it start or end.
bool refused_without_running(const error_info& e);

}  // namespace troupe
