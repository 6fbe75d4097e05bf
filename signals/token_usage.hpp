#pragma once
// Token usage reported by a model call, summed per request and per thread.

#include "signals/decode_error.hpp"

#include <boost/json/value.hpp>

#include <cstdint>

namespace troupe {

struct token_usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;

  std::int64_t total_tokens() const { return input_tokens + output_tokens; }
  token_usage& operator+=(const token_usage& o) {
    input_tokens += o.input_tokens;
    output_tokens += o.output_tokens;
    return *this;
  }
  friend bool operator==(const token_usage&, const token_usage&) = default;
};

boost::json::value to_json(const token_usage& u);
decoded<token_usage> decode_usage(const boost::json::value& v, std::string path);

}  // namespace troupe
