#pragma once
// A request's entries grouped by ReAct iteration, derived from the entries'
// refs (request_id, iteration, tool_call_id) each time it is asked for: the
// thread stays the only place anything is stored.

#include "thread/thread.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace troupe {

struct tool_exchange {
  const entry* call = nullptr;
  const entry* result = nullptr;  // null while the tool is still running
};

struct iteration {
  int number = 0;
  std::vector<const entry*> messages;
  std::vector<tool_exchange> tool_calls;  // in call order
  std::vector<const entry*> others;       // errors, notes, …
  std::int64_t started_at = 0;            // `at` of its first entry
  // `at` of its last entry once the iteration is over: every tool call has
  // its result, it holds the request's answer or error, or a later iteration
  // began. Null while the model or a tool is still at work.
  std::optional<std::int64_t> completed_at;
};

// Entry pointers point into `t`'s storage and stay valid while `t` (or another
// owner of that storage) lives.
std::vector<iteration> iterations_of(const thread_view& t, std::string_view request_id);

}  // namespace troupe
