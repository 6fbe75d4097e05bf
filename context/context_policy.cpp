#include "context/context_policy.hpp"

#include <algorithm>

namespace troupe {

bool context_policy::includes(std::string_view kind) const {
  if (include_kinds.empty())
    return kind == "message" || kind == "tool_call" || kind == "tool_result" || kind == "summary";
  return std::find(include_kinds.begin(), include_kinds.end(), kind) != include_kinds.end();
}

context_policy context_policy::short_context() {
  context_policy p;
  p.max_input_tokens = 4000;
  p.reserve_output_tokens = 1000;
  p.keep_last_turns = 2;
  return p;
}

context_policy context_policy::long_context() {
  context_policy p;
  p.max_input_tokens = 100'000;
  p.reserve_output_tokens = 8000;
  p.keep_last_turns = 50;
  return p;
}

context_policy context_policy::tool_focused() {
  context_policy p;
  p.max_input_tokens = 16'000;
  p.reserve_output_tokens = 2000;
  p.keep_last_turns = 5;
  return p;
}

context_policy context_policy::for_model(std::string_view model) {
  // Context windows of known families, with room left for the answer.
  struct family {
    std::string_view prefix;
    std::int64_t window;
  };
  static constexpr family families[] = {
      {"gpt-4.1", 1'000'000}, {"gpt-4o", 128'000},  {"gpt-4-turbo", 128'000}, {"gpt-4", 8'192},
      {"gpt-3.5", 16'385},    {"o1", 200'000},      {"o3", 200'000},          {"o4", 200'000},
      {"claude", 200'000},    {"llama-3", 128'000}, {"qwen2.5", 32'768},      {"mistral", 32'768},
  };
  if (const auto colon = model.find(':'); colon != std::string_view::npos) model.remove_prefix(colon + 1);
  for (const family& f : families) {
    if (model.rfind(f.prefix, 0) != 0) continue;
    context_policy p = long_context();
    p.max_input_tokens = f.window;
    p.reserve_output_tokens = std::min<std::int64_t>(8000, f.window / 4);
    return p;
  }
  return context_policy{};
}

context_policy summarizing(context_policy p, std::optional<std::size_t> keep_last_turns) {
  p.summaries = summarization::request_new;
  p.keep_last_turns = keep_last_turns.value_or(0);
  return p;
}

context_policy apply(context_policy p, const context_overrides& o) {
  if (o.max_input_tokens) p.max_input_tokens = *o.max_input_tokens;
  if (o.reserve_output_tokens) p.reserve_output_tokens = *o.reserve_output_tokens;
  if (o.max_messages) p.max_messages = static_cast<std::size_t>(*o.max_messages);
  if (o.keep_last_turns) p.keep_last_turns = static_cast<std::size_t>(*o.keep_last_turns);
  if (o.summarize) p.summaries = *o.summarize ? summarization::request_new : summarization::use_existing;
  if (o.summarize_to) p.summarize_to = *o.summarize_to;
  return p;
}

context_policy resolve_policy(const context_policy& agent_config, const context_overrides& agent_state,
                              const context_overrides& request) {
  return apply(apply(agent_config, agent_state), request);
}

}  // namespace troupe
