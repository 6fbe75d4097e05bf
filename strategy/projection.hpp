#pragma once
// The model's context as a projection of the thread: computed fresh for each
// model call from the committed entries plus the entries about to be
// committed with it, and thrown away afterwards.
//
// This projection sends the whole conversation: the system prompt, then every
// message in order, with an assistant's tool calls grouped into one assistant
// message followed by their results. Other kinds (notes, errors, checkpoints)
// are the runtime's records and are not shown to the model.

#include "directives/llm_message.hpp"
#include "strategy/thread.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

message_list project_messages(std::string_view system_prompt, const thread_view& t,
                              std::span<const entry_draft> pending);

// The projection of a thread's first `basis` entries. Threads only grow, so
// the next model call needs to project only what was appended since: the
// machine keeps the last prefix in its state. Immutable once built.
struct projected_prefix {
  std::string thread_id;
  std::string system_prompt;
  std::uint64_t basis = 0;  // entries projected
  message_list messages;
  std::string open_call_id;  // the model call whose tool calls join the last message
};

// `prefix` extended to all of `t` (the same pointer if nothing was added).
// A null prefix, or one made for another thread or system prompt, is rebuilt.
std::shared_ptr<const projected_prefix> project_prefix(std::shared_ptr<const projected_prefix> prefix,
                                                       std::string_view system_prompt, const thread_view& t);
// The context for a model call: the prefix, then the entries not yet committed.
message_list with_pending(const projected_prefix& prefix, std::span<const entry_draft> pending);

// How a tool_result entry's payload reads to the model: the result as JSON
// text (a string result as itself), or {"error": {...}}.
std::string tool_result_text(const boost::json::object& payload);

}  // namespace troupe
