#include "runtime/llm/llm_errors.hpp"

#include "json/json_parse.hpp"
#include "json/json_reader.hpp"
#include "runtime/detail/text.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>

namespace troupe {

namespace json = boost::json;

namespace {

// The error object of a body in either provider's shape. A field of the wrong
// type in it is ignored: the call has failed already, and the status says how.
std::optional<json_reader> error_object(const json::value& body, std::optional<decode_error>& ignored) {
  if (const auto* o = body.if_object()) return json_reader(*o, "", ignored).nested("error");
  return std::nullopt;
}

bool mentions_context_length(const json_reader& e) {
  const std::string text = ascii_lower(std::string(e.text("code")) + " " + std::string(e.text("message")));
  return text.find("context_length_exceeded") != std::string::npos ||
         text.find("context length") != std::string::npos || text.find("prompt is too long") != std::string::npos ||
         text.find("maximum context") != std::string::npos;
}

}  // namespace

// Not timeout: a model that was too slow once is likely to be again, and a
// retry would pay for the whole generation twice.
bool is_retryable(std::string_view type) {
  return type == "rate_limited" || type == "overloaded" || type == "server" || type == "network";
}

error_info classify_http_error(int status, std::string_view body, std::string_view retry_after, std::int64_t now_ms) {
  error_info e;
  e.http_status = status;
  e.attempts = 1;
  if (status == 401)
    e.type = "auth";
  else if (status == 403)
    e.type = "permission";
  else if (status == 404)
    e.type = "not_found";
  else if (status == 408)
    e.type = "timeout";
  else if (status == 429)
    e.type = "rate_limited";
  else if (status == 529)
    e.type = "overloaded";
  else if (status >= 500)
    e.type = "server";
  else
    e.type = "bad_request";

  boost::system::error_code ec;
  const json::value parsed = parse_json(body, ec);
  std::optional<decode_error> ignored;
  const std::optional<json_reader> detail = ec ? std::nullopt : error_object(parsed, ignored);
  if (detail) {
    e.message = std::string(detail->text("message"));
    const std::string_view kind = detail->text("type");
    if (kind == "overloaded_error")
      e.type = "overloaded";
    else if (kind == "rate_limit_error")
      e.type = "rate_limited";
    else if (kind == "authentication_error")
      e.type = "auth";
    else if (kind == "permission_error")
      e.type = "permission";
    if (e.type == "bad_request" && mentions_context_length(*detail)) e.type = "context_length_exceeded";
  }
  if (e.message.empty()) {
    // A body that is not JSON (a proxy's HTML page) is quoted, shortened.
    e.message = "HTTP " + std::to_string(status);
    if (!body.empty()) e.message += ": " + shortened(body, 200);
  }
  if (!retry_after.empty()) e.retry_after_seconds = parse_retry_after(retry_after, now_ms);
  return e;
}

error_info classify_stream_error(const json::value& error) {
  error_info e;
  e.type = "server";
  e.attempts = 1;
  if (!error.is_object()) {
    e.message = "the stream reported an error";
    return e;
  }
  std::optional<decode_error> ignored;
  const json_reader o(error.get_object(), "error", ignored);
  e.message = std::string(o.text("message"));
  const std::string kind = ascii_lower(o.text("type")) + " " + ascii_lower(o.text("code"));
  if (kind.find("overloaded") != std::string::npos)
    e.type = "overloaded";
  else if (kind.find("rate_limit") != std::string::npos)
    e.type = "rate_limited";
  else if (kind.find("invalid_request") != std::string::npos)
    e.type = mentions_context_length(o) ? "context_length_exceeded" : "bad_request";
  if (e.message.empty()) e.message = "the stream reported an error";
  return e;
}

std::optional<std::int64_t> parse_http_date(std::string_view s) {
  // curl_getdate needs a terminated string, and -1 is its only failure.
  const std::string text(s);
  const time_t at = curl_getdate(text.c_str(), nullptr);
  if (at == -1) return std::nullopt;
  return static_cast<std::int64_t>(at) * 1000;
}

std::optional<double> parse_retry_after(std::string_view header, std::int64_t now_ms) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  if (header.empty()) return std::nullopt;
  double seconds = 0;
  auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), seconds);
  if (ec == std::errc{} && end == header.data() + header.size()) {
    if (seconds < 0 || !std::isfinite(seconds)) return std::nullopt;
    return seconds;
  }
  if (auto at = parse_http_date(header)) return std::max(0.0, static_cast<double>(*at - now_ms) / 1000.0);
  return std::nullopt;
}

std::chrono::milliseconds retry_delay(int attempt, const llm_retry_policy& policy,
                                      std::optional<double> retry_after_seconds, double jitter01) {
  using std::chrono::milliseconds;
  if (retry_after_seconds)
    return std::min(milliseconds(static_cast<std::int64_t>(std::ceil(*retry_after_seconds * 1000))),
                    policy.max_backoff);
  const double ceiling =
      std::min(static_cast<double>(policy.max_backoff.count()),
               static_cast<double>(policy.initial_backoff.count()) * std::pow(2.0, std::max(0, attempt - 2)));
  return milliseconds(static_cast<std::int64_t>(ceiling * std::clamp(jitter01, 0.0, 1.0)));
}

}  // namespace troupe
