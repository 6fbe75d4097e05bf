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

namespace troupe {

struct observation {
  telemetry_kind kind;
  std::string call_id;
  std::string tool_call_id;
  int iteration = 0;
  std::string detail;
  bool ends_model_call = false;  // its duration is the model call's
  std::optional<stream_event> event;
};

std::optional<observation> observe(const react_state& state, const signal& s);

}  // namespace troupe
