#pragma once
// What an agent's ReAct loop is configured with. The machine reads it on every
// step and never copies it into its state.

#include "directives/tool_spec.hpp"
#include "signals/generation_params.hpp"

#include <cstdint>
#include <string>

namespace troupe {

struct react_config {
  std::string system_prompt;
  std::string model;
  tool_set tools;  // null or empty: the model is offered no tools
  int max_iterations = 10;
  generation_params params;
  std::int64_t tool_timeout_ms = 30'000;
};

}  // namespace troupe
