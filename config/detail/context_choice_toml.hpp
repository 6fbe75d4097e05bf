#pragma once
// A context policy as a TOML table gives it, in the keys the command line
// uses: context_policy (short | long | tool | auto), max_input_tokens,
// keep_last_turns, summarize, summarize_to.

#include "config/detail/toml_reader.hpp"
#include "context/context_choice.hpp"

namespace troupe {

context_choice read_context_choice(table_reader& r);

}  // namespace troupe
