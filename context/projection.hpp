#pragma once
// The model's context as a projection of the thread: made for each model
// call from the committed entries plus the entries about to be committed
// with it. A machine keeps what its last projection decided (unit_cache),
// and the next one extends that window by the entries appended since,
// instead of walking the window again.
//
// Messages, tool calls and tool results become the model's messages (an
// assistant's tool calls grouped into one assistant message followed by their
// results); other kinds (notes, errors, checkpoints) are the runtime's
// records and are not shown to the model.

#include "context/context_policy.hpp"
#include "directives/context_meta.hpp"
#include "directives/llm_message.hpp"
#include "thread/small_string.hpp"
#include "thread/thread.hpp"

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

// Where the window's walk stood, and what its decisions rested on.
struct window_basis {
  std::uint64_t end = 0;        // the entries it saw: committed and pending
  std::uint64_t committed = 0;  // of which committed
  small_string last_committed_id;
  std::uint64_t pending_digest = 0;  // of what the pending entries showed it (projection.cpp)
  context_policy policy;
  std::size_t lower = 0;    // the latest summary's boundary
  std::int64_t fixed = 0;   // the tokens of the system prompt and summary
  std::size_t stop_at = 0;  // where the walk stopped
  bool stopped_early = false;
  bool extended = false;  // this window extended an earlier one instead of being walked
};

// What a projection of a thread decided, for the next projection of the
// same thread to reuse: the messages of the window's units (a unit of
// committed entries never changes), and what the window was decided from,
// so that the next one can extend it by the entries appended since instead
// of walking the window again. It holds only what the window held, so it
// stays small.
//
// A cache describes the thread it was made from with the projection's
// pending entries committed, as the step that made it commits them: a
// machine keeps it in the state that step leaves (react_state), which is
// adopted only once they are stored. A thread that does not hold them (by
// the id of the last entry that was committed then, and a digest of what
// the projection read of the pending ones) is projected without the cache.
struct unit_cache {
  struct unit {
    std::uint64_t first_seq, last_seq;
    std::vector<std::shared_ptr<llm_message>> messages;
    std::int64_t cost = 0;             // tokens of its included entries
    std::size_t message_count = 0;     // messages it counts as for max_messages
    std::size_t entries_included = 0;  // entries of included kinds
    bool is_user = false;              // begins a turn
  };
  // At namespace scope: clang cannot tell whether a nested struct with
  // member initializers is default-constructible inside its enclosing
  // class, and std::optional<basis>::emplace() then does not compile.
  using basis = window_basis;
  std::string thread_id;
  std::vector<std::shared_ptr<const unit>> units;  // the window, by first_seq
  std::optional<basis> extend_from;
  std::shared_ptr<llm_message> system;  // the system prompt's message, shared while it stays the same
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
// `cache` (optional) is what an earlier projection of the same thread left;
// this one's is left in `next_cache` (when given). With the same policy and
// summary, this projection walks only the entries appended since and then
// decides on the earlier window's units as stored; otherwise it walks the
// window and reuses the units it finds there. The result is the same with or
// without a cache.
projection project(const thread_view& t, const context_policy& policy, std::span<const entry_draft> pending,
                   std::string_view system_prompt, const unit_cache* cache = nullptr, unit_cache* next_cache = nullptr);

// How a tool_result entry's payload reads to the model: the result as JSON
// text (a string result as itself), or {"error": {...}}.
std::string tool_result_text(const boost::json::object& payload);
std::string tool_result_text(const entry_payload& payload);

}  // namespace troupe
