#pragma once
// The end of a request, delivered to whoever asked: the final answer, or the
// typed error that ended it, and the tokens the request used. A request that
// paused for decisions has not ended: its reply is an `awaiting_input` error
// (what callers that know nothing of approvals already handle: no answer)
// listing the calls that wait, and a decision continues it.

#include "directives/awaiting_input.hpp"
#include "signals/error_info.hpp"
#include "signals/token_usage.hpp"

#include <string>
#include <variant>
#include <vector>

namespace troupe {

struct reply {
  std::string request_id;
  std::variant<std::string, error_info> outcome;  // answer text, or why there is none
  token_usage usage;
  int iterations = 0;
  std::vector<open_approval> pending{};  // paused: the calls that wait for a decision

  bool ok() const { return std::holds_alternative<std::string>(outcome); }
  bool paused() const { return !pending.empty(); }
  friend bool operator==(const reply&, const reply&) = default;
};

}  // namespace troupe
