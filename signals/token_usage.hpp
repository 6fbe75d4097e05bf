#pragma once
// Token usage reported by a model call, summed per request and per thread.
// A call that reported none has no token_usage (std::optional, JSON null):
// unknown is not zero. A sum counts such calls apart instead of adding zeros.

#include "json/decode_error.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>

namespace troupe {

struct token_usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  // In a sum: the calls that reported no usage, whose tokens are in neither
  // count above. Always 0 for one call's own usage.
  std::int64_t calls_without_usage = 0;

  std::int64_t total_tokens() const { return input_tokens + output_tokens; }
  token_usage& operator+=(const token_usage& o) {
    input_tokens += o.input_tokens;
    output_tokens += o.output_tokens;
    calls_without_usage += o.calls_without_usage;
    return *this;
  }
  // Adds one model call: its usage, or one more call without usage.
  token_usage& operator+=(const std::optional<token_usage>& call) {
    if (call) return *this += *call;
    ++calls_without_usage;
    return *this;
  }
  friend bool operator==(const token_usage&, const token_usage&) = default;
};

// {"input_tokens", "output_tokens"}, and "calls_without_usage" when it is not 0.
boost::json::value to_json(const token_usage& u);
decoded<token_usage> decode_usage(const boost::json::value& v, std::string path);

}  // namespace troupe
