#pragma once
// A piece of a streamed model answer. Deltas are shown to subscribers as they
// arrive but never committed: only the final llm_result is.

#include <string>

namespace troupe {

struct llm_delta {
  std::string call_id;
  std::string text;
  std::string thinking;

  friend bool operator==(const llm_delta&, const llm_delta&) = default;
};

}  // namespace troupe
