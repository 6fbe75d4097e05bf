#pragma once
// Typed errors for model calls, from the HTTP status and body a provider
// answered with, and the retry policy that goes with them. Pure functions:
// the time and the jitter are inputs.
//
// Types: auth, permission, not_found, bad_request, context_length_exceeded,
// rate_limited, overloaded, server, network, timeout, cancelled,
// malformed_response. rate_limited, overloaded, server and network are
// retried; the others are not.

#include "signals/error_info.hpp"

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace troupe {

// `retry_after` is the Retry-After header, if any; `now_ms` turns an HTTP
// date in it into seconds from now. Bodies in OpenAI's {"error": {...}} and
// Anthropic's {"type": "error", "error": {...}} shapes give the message and
// refine the type.
error_info classify_http_error(int status, std::string_view body, std::string_view retry_after, std::int64_t now_ms);

// An error object that arrived inside a 200 stream (OpenAI's {"error": ...}
// chunk, Anthropic's error event).
error_info classify_stream_error(const boost::json::value& error);

bool is_retryable(std::string_view error_type);

// Retry-After as delta-seconds ("120", "1.5") or as an HTTP date.
std::optional<double> parse_retry_after(std::string_view header, std::int64_t now_ms);
// An HTTP date as Unix milliseconds, in any of the three forms a recipient
// must accept (RFC 9110 5.6.7): IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT",
// RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" and asctime "Sun Nov  6 08:49:37
// 1994". libcurl's curl_getdate reads them; it is lenient beyond that (a
// missing zone is GMT), and text it cannot read at all is nullopt.
std::optional<std::int64_t> parse_http_date(std::string_view text);

struct llm_retry_policy {
  int max_retries = 3;  // beyond the first attempt
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
};

// How long to wait before attempt `attempt` (2 for the first retry): the
// server's Retry-After when it gave one, else exponential backoff with full
// jitter (`jitter01` uniform in [0, 1)), capped at max_backoff.
std::chrono::milliseconds retry_delay(int attempt, const llm_retry_policy& policy,
                                      std::optional<double> retry_after_seconds, double jitter01);

}  // namespace troupe
