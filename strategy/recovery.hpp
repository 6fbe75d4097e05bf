#pragma once
// What a thread needs after its agent died mid-request: every tool call that
// never got a result gets an "interrupted" error result, so the thread is
// valid for the model again (each tool call answered exactly once). A call
// waiting for a decision is left as it is: its request is paused, and
// paused_request (approvals.hpp) rebuilds it.

#include "thread/thread.hpp"

#include <vector>

namespace troupe {

std::vector<entry_draft> interrupted_tool_results(const thread_view& t);

}  // namespace troupe
