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

#include <span>
#include <string_view>
#include <vector>

namespace troupe {

std::vector<llm_message> project_messages(std::string_view system_prompt, const thread_view& t,
                                          std::span<const entry_draft> pending);

// How a tool_result entry's payload reads to the model: the result as JSON
// text (a string result as itself), or {"error": {...}}.
std::string tool_result_text(const boost::json::object& payload);

}  // namespace troupe
