#pragma once
// The model's context as a projection of the thread: computed fresh for each
// model call from the committed entries plus the entries about to be
// committed with it, and thrown away afterwards.
//
// Messages, tool calls and tool results become the model's messages (an
// assistant's tool calls grouped into one assistant message followed by their
// results); other kinds (notes, errors, checkpoints) are the runtime's
// records and are not shown to the model.

#include "directives/context_meta.hpp"
#include "directives/llm_message.hpp"
#include "strategy/context_policy.hpp"
#include "strategy/thread.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

// The whole conversation, without a budget or a window.
message_list project_messages(std::string_view system_prompt, const thread_view& t,
                              std::span<const entry_draft> pending);

struct projection {
  message_list messages;
  context_meta meta;
};

// The messages of the complete units of a thread's last projection. A unit
// of committed entries never changes, so the next projection of the same
// thread reuses them instead of building them again; it holds only what the
// window held, so it stays small.
struct unit_cache {
  struct unit {
    std::uint64_t first_seq, last_seq;
    std::vector<std::shared_ptr<llm_message>> messages;
  };
  std::string thread_id;
  std::vector<unit> units;  // by first_seq
};

// The model's context under a policy:
//  1. only the kinds the policy includes;
//  2. only what follows the latest summary's to_seq (the summary stands in for the rest);
//  3. entries grouped into units never split: a message alone, or an
//     assistant's tool calls with all of their results;
//  4. at most keep_last_turns turns (a turn begins with a user message);
//  5. units added newest first while they fit the budget that is left after
//     the system prompt, the summary and the pending entries;
//  6. the system prompt, then the summary, then the kept units, then the
//     pending entries.
// Deterministic, and it reads only the entries it could include: its cost
// grows with the window, not with the thread.
// `cache` (optional) holds the units of an earlier projection of the same
// thread; the units of this one are left in `next_cache` (when given). The
// result is the same with or without them.
projection project(const thread_view& t, const context_policy& policy, std::span<const entry_draft> pending,
                   std::string_view system_prompt, const unit_cache* cache = nullptr, unit_cache* next_cache = nullptr);

// How a tool_result entry's payload reads to the model: the result as JSON
// text (a string result as itself), or {"error": {...}}.
std::string tool_result_text(const boost::json::object& payload);
std::string tool_result_text(const entry_payload& payload);

}  // namespace troupe
