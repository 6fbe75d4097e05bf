#include "context/context_choice.hpp"

#include <algorithm>

namespace troupe {

bool is_context_preset(std::string_view name) {
  return name.empty() || name == "short" || name == "long" || name == "tool" || name == "auto";
}

context_policy resolve_context(const context_choice& c, std::string_view model) {
  context_policy p;
  if (c.preset == "short")
    p = context_policy::short_context();
  else if (c.preset == "long")
    p = context_policy::long_context();
  else if (c.preset == "tool")
    p = context_policy::tool_focused();
  else if (c.preset == "auto")
    p = context_policy::for_model(model);
  if (c.max_input_tokens) {
    p.max_input_tokens = *c.max_input_tokens;
    p.reserve_output_tokens = std::min(p.reserve_output_tokens, p.max_input_tokens / 4);
  }
  if (c.summarize)
    p = summarizing(p, c.keep_last_turns);
  else if (c.keep_last_turns)
    p.keep_last_turns = *c.keep_last_turns;
  if (c.summarize_to) p.summarize_to = *c.summarize_to;
  return p;
}

}  // namespace troupe
