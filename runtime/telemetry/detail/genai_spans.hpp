#pragma once
// Telemetry events as spans in OpenTelemetry's GenAI semantic conventions:
// a request is `invoke_agent {agent}`, each of its model calls
// `chat {model}` and each tool call `execute_tool {tool}`, the last two
// children of the first; a tool call's wait for a person's decision is
// `await_approval {tool}`, from its approval request to its decision. Every span comes whole from the one event that
// ends it (it carries the span's ids, its end and its duration), so no state is kept between events and a lost start
// cannot leave a span half made.

#include "runtime/telemetry/span.hpp"
#include "runtime/telemetry/telemetry.hpp"

#include <optional>

namespace troupe {

// Whether an event of this kind ends a span.
bool ends_span(telemetry_kind k);

// The span an event ends; nullopt for other events and for events without
// span ids (emitted while no sink recorded spans).
std::optional<span> genai_span(const telemetry_event& e);

}  // namespace troupe
