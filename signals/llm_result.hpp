#pragma once
// The end of one model call: either what the model produced, or why the call
// failed after its retries.

#include "signals/error_info.hpp"
#include "signals/token_usage.hpp"
#include "signals/tool_call.hpp"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace troupe {

struct llm_completion {
  // The answer text. When empty, the text accumulated from the call's deltas
  // is used, so a provider may either repeat the text here or leave it out.
  std::string text;
  std::string thinking;
  std::vector<tool_call> tool_calls;  // non-empty: the model wants tools run
  std::optional<token_usage> usage;   // absent when the provider did not report it
  std::string finish_reason;          // as the provider reported it ("stop", "tool_calls", …)
  // What the provider called its response and the model that answered (which
  // may differ from the one asked for: an alias, a dated snapshot); empty
  // when it did not say.
  std::string response_id{};
  std::string response_model{};

  friend bool operator==(const llm_completion&, const llm_completion&) = default;
};

struct llm_result {
  std::string call_id;
  std::variant<llm_completion, error_info> outcome;

  bool ok() const { return std::holds_alternative<llm_completion>(outcome); }
  friend bool operator==(const llm_result&, const llm_result&) = default;
};

}  // namespace troupe
