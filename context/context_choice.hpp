#pragma once
// How a user chooses a context policy, on the command line (--context-policy,
// --max-input-tokens, …), in a serve config or in a scenario file: a preset
// and the fields that change it. Resolved for a model, since the "auto"
// preset follows the model's window.

#include "context/context_policy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

struct context_choice {
  std::string preset;  // short | long | tool | auto; empty: the default policy
  std::optional<std::int64_t> max_input_tokens;
  std::optional<std::size_t> keep_last_turns;
  bool summarize = false;
  std::optional<double> summarize_to;

  friend bool operator==(const context_choice&, const context_choice&) = default;
};

// "short", "long", "tool", "auto" or empty.
bool is_context_preset(std::string_view name);

context_policy resolve_context(const context_choice& c, std::string_view model);

}  // namespace troupe
