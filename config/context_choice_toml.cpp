#include "config/detail/context_choice_toml.hpp"

namespace troupe {

context_choice read_context_choice(table_reader& r) {
  context_choice c;
  r.text("context_policy", c.preset);
  if (!is_context_preset(c.preset)) r.fail("context_policy", "must be short, long, tool or auto");
  if (r.has("max_input_tokens")) c.max_input_tokens = r.integer("max_input_tokens", 0, 1, std::int64_t{1} << 40);
  if (r.has("keep_last_turns"))
    c.keep_last_turns = static_cast<std::size_t>(r.integer("keep_last_turns", 0, 0, 1'000'000));
  r.flag("summarize", c.summarize);
  double to = 0;
  if (r.number_in("summarize_to", to, 0, 1)) {
    if (!(to > 0)) r.fail("summarize_to", "must be more than 0 and at most 1");
    c.summarize_to = to;
  }
  return c;
}

}  // namespace troupe
