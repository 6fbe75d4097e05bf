#pragma once
// The end of a request, delivered to whoever asked: the final answer, or the
// typed error that ended it, and the tokens the request used.

#include "signals/error_info.hpp"
#include "signals/token_usage.hpp"

#include <string>
#include <variant>

namespace troupe {

struct reply {
  std::string request_id;
  std::variant<std::string, error_info> outcome;  // answer text, or why there is none
  token_usage usage;
  int iterations = 0;

  bool ok() const { return std::holds_alternative<std::string>(outcome); }
  friend bool operator==(const reply&, const reply&) = default;
};

}  // namespace troupe
