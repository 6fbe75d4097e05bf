#pragma once
// What a thread records of one request, read back for an ask or a decision
// that names the request again: its newest entry, and how it ended when
// that entry is its end.

#include "directives/reply.hpp"
#include "thread/thread.hpp"

#include <optional>
#include <string_view>

namespace troupe {

// The request's newest entry, or nullptr if the thread holds none of it. A
// running request's entries end the thread, so the walk back from the end
// is short for it; for a request the thread does not hold, it reads every
// entry's refs once.
const entry* newest_entry_of_request(const thread_view& t, std::string_view request_id);

// How a request ended, as `newest` (its newest entry) says: its final answer
// or its error. nullopt if that entry is no end (the request was cut off
// before its end). The token usage and the iterations are not in the thread.
std::optional<reply> recorded_end(const entry& newest, std::string_view request_id);

}  // namespace troupe
