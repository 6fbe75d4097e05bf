#pragma once
// "Summarize what fell out of the context window": a model call of its own,
// run beside the user's request and never blocking it. Its result comes back
// as an llm_result for `call_id` and is committed as a summary entry that
// covers the thread from from_seq to to_seq.

#include "directives/llm_message.hpp"
#include "signals/generation_params.hpp"

#include <cstdint>
#include <string>

namespace troupe {

struct summarize {
  std::string call_id;
  std::string model;
  message_list messages;  // the summarizer's instructions and what to summarize
  std::uint64_t from_seq = 0;
  std::uint64_t to_seq = 0;
  generation_params params;
  std::string request_id;  // the request whose projection asked for it
};

}  // namespace troupe
