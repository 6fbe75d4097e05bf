#pragma once
// How long each tool call waited for a person, read from the thread: from
// its approval_request entry to its decision entry, both stamped when they
// were committed. The thread is the record because a wait may span
// restarts of the process, which no timer in memory survives.

#include "runtime/telemetry/telemetry.hpp"
#include "thread/thread.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace troupe {

// An approval_decided event for each decision entry at seq `from` or later
// (those a step just committed), with its wait as duration_us and its end
// as end_unix_ns; detail is the tool's name. Span ids are the caller's to
// fill (genai_spans.hpp).
std::vector<telemetry_event> approval_waits(const thread_view& t, std::uint64_t from, std::string_view agent_id);

}  // namespace troupe
