#pragma once
// A typed error as a value. Errors travel as data through troupe: a failed
// tool becomes a tool result the model reads, a failed LLM call ends its
// request with one of these in the reply.

#include "signals/decode_error.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string>

namespace troupe {

// The error types troupe itself produces. `type` stays an open string so a
// tool can report its own ("not_found", "quota"), which the model then reads.
namespace error_type {
// request lifecycle
inline constexpr const char* busy = "busy";
inline constexpr const char* cancelled = "cancelled";
inline constexpr const char* max_iterations = "max_iterations";
inline constexpr const char* invalid_query = "invalid_query";
// tool calls
inline constexpr const char* unknown_tool = "unknown_tool";
inline constexpr const char* invalid_arguments = "invalid_arguments";
inline constexpr const char* interrupted = "interrupted";
inline constexpr const char* timeout = "timeout";
inline constexpr const char* tool_failed = "tool_failed";
}  // namespace error_type

struct error_info {
  std::string type;
  std::string message;
  std::optional<int> http_status;             // for errors that came over HTTP
  int attempts = 0;                           // model calls made, when retried
  std::optional<double> retry_after_seconds;  // what the server asked for

  friend bool operator==(const error_info&, const error_info&) = default;
};

boost::json::value to_json(const error_info& e);
decoded<error_info> decode_error_info(const boost::json::value& v, std::string path);

}  // namespace troupe
