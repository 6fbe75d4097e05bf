#pragma once
// What a signal about to be applied tells the world: the telemetry to
// report and the event a subscribed caller sees. Pure: the agent emits what
// this returns. Signals for another call than the one awaited (late, stale)
// tell nothing.

#include "actors/stream_event.hpp"
#include "runtime/telemetry/telemetry.hpp"
#include "signals/signal.hpp"
#include "strategy/react_state.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace troupe {

// Its strings are views into the signal observed: read them while it lives.
struct observation {
  telemetry_kind kind;
  std::string_view call_id;
  std::string_view tool_call_id;
  int iteration = 0;
  std::string_view detail;
  bool ends_model_call = false;  // its duration is the model call's
  std::optional<stream_event> event;
};

// `with_event`: whether the caller follows the request's events; without
// one, no event is made (it copies the delta's text or the tool's result).
std::optional<observation> observe(const react_state& state, const signal& s, bool with_event = true);

}  // namespace troupe
