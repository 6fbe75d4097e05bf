#pragma once
// How a thread becomes a model's context: a token budget, how many turns and
// messages to keep, which entry kinds count, and whether summaries stand in
// for what falls out of the window. The thread itself stays whole.

#include "signals/query.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

enum class summarization { none, use_existing, request_new };
enum class summary_role { system, user };

struct context_policy {
  std::int64_t max_input_tokens = 8000;
  std::int64_t reserve_output_tokens = 2000;
  std::size_t max_messages = 0;     // 0: unlimited
  std::size_t keep_last_turns = 3;  // 0: unlimited; a turn begins with a user message
  summarization summaries = summarization::use_existing;
  summary_role summary_as = summary_role::system;
  // Empty: message, tool_call, tool_result and summary. (The default costs no
  // allocation: a policy is resolved for every model call.)
  std::vector<std::string> include_kinds;
  // Ask for a summary once this many entries follow the latest one (0: only
  // when the window had to drop something).
  std::size_t summarize_after_entries = 0;
  // When the window overflows, the new summary covers enough that what
  // follows it fills at most this fraction of the window (of its tokens, and
  // of its turn and message limits). Hysteresis: the next summary is then due
  // only after the conversation has grown by the rest of the window, not on
  // the very next turn. 1: cover only what fell out.
  double summarize_to = 0.5;

  // The tokens left for the conversation itself.
  std::int64_t input_budget() const { return max_input_tokens - reserve_output_tokens; }
  bool includes(std::string_view kind) const;

  friend bool operator==(const context_policy&, const context_policy&) = default;

  // Presets.
  static context_policy short_context();  // 4k window, the last 2 turns
  static context_policy long_context();   // 100k window, the last 50 turns
  static context_policy tool_focused();   // 16k window, the last 5 turns, room for tool output
  // By model family ("gpt-4o", "claude-…", "llama-3…"); unknown models get the default.
  static context_policy for_model(std::string_view model);
};

// The policy with summaries requested, as `troupe --summarize` sets it: the
// summary is what forgets, so the window is bound by its token budget alone
// unless `keep_last_turns` names a turn limit. A turn limit of its own would
// ask for a summary every few turns: the current turn always stays whole, so
// a window of N turns makes one per N - ⌊N × summarize_to⌋ + 1 turns at best.
context_policy summarizing(context_policy p, std::optional<std::size_t> keep_last_turns = std::nullopt);

// The policy with the fields `o` sets replaced.
context_policy apply(context_policy base, const context_overrides& o);

// Resolution, highest first: the request's overrides, the agent's state's,
// the agent's configuration (which starts from the defaults).
context_policy resolve_policy(const context_policy& agent_config, const context_overrides& agent_state,
                              const context_overrides& request);

}  // namespace troupe
