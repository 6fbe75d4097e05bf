#pragma once
// A token bucket per user: each request takes a token, tokens come back at
// `per_second` up to `burst`. A user whose bucket is empty is told how long
// until the next token (429 with Retry-After), whatever their requests are.
// Thread-safe; the time is given, so the arithmetic is tested without a clock.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace troupe::serve {

class rate_limiter {
 public:
  using clock = std::chrono::steady_clock;
  // per_second 0: no limit.
  rate_limiter(double per_second, double burst) : per_second_(per_second), burst_(burst) {}

  // Takes one of the user's tokens: nullopt if there was one, else the
  // whole seconds (at least 1) until there is.
  std::optional<std::chrono::seconds> take(const std::string& user, clock::time_point now);

 private:
  struct bucket {
    double tokens;
    clock::time_point at;
  };
  double per_second_;
  double burst_;
  std::mutex mutex_;
  // One per user that sent a request; users come from the config's keys.
  std::unordered_map<std::string, bucket> buckets_;
};

}  // namespace troupe::serve
