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

// What a budgeted projection did, for tracing, telemetry and /context.
struct projection_meta {
  std::int64_t estimated_tokens = 0;
  bool truncated = false;   // older entries (after the summary) were left out
  bool oversized = false;   // the newest unit alone exceeds the budget: it was sent alone
  std::size_t entries_included = 0;
  std::size_t entries_total = 0;  // entries in the thread
  bool summary_used = false;
  std::uint64_t basis_rev = 0;
  std::optional<std::uint64_t> basis_last_seq;
  std::size_t pending_count = 0;
  bool needs_summary = false;

  friend bool operator==(const projection_meta&, const projection_meta&) = default;
};

struct projection {
  message_list messages;
  projection_meta meta;
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
projection project(const thread_view& t, const context_policy& policy, std::span<const entry_draft> pending,
                   std::string_view system_prompt);

// How a tool_result entry's payload reads to the model: the result as JSON
// text (a string result as itself), or {"error": {...}}.
std::string tool_result_text(const boost::json::object& payload);

}  // namespace troupe
