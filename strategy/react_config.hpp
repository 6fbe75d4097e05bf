#pragma once
// What an agent's ReAct loop is configured with. The machine reads it on every
// step and never copies it into its state.

#include "context/context_policy.hpp"
#include "directives/tool_spec.hpp"
#include "signals/generation_params.hpp"
#include "strategy/approval_rule.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

inline constexpr std::string_view default_summary_prompt =
    "You keep the memory of a conversation between a user and an assistant that uses tools. Write a "
    "concise summary of the transcript below for the assistant's own later use: the user's goals and "
    "preferences, facts established (including what tools returned), decisions made and questions still "
    "open. If the transcript starts with an earlier summary, fold it in. Reply with the summary only.";

struct react_config {
  // An agent's own prompt, passed to step() beside the config, stands for
  // this one: the runtime's agents share configs and leave it empty.
  std::string system_prompt;
  std::string model;
  tool_set tools;            // null or empty: the model is offered no tools
  approval_rules approvals;  // null, or a tool without a rule: its calls run without asking
  int max_iterations = 10;
  generation_params params;
  std::int64_t tool_timeout_ms = 30'000;
  context_policy context;  // how the thread becomes each call's context
  // Summaries (when the policy requests them): the model (empty: `model`)
  // and the instructions they are written with (empty: default_summary_prompt).
  std::string summary_model;
  std::string summary_prompt;
  int summary_max_tokens = 600;

  // Tool sets compare by identity: agents spawned together share one.
  friend bool operator==(const react_config&, const react_config&) = default;
};

}  // namespace troupe
