#include "apps/serve/rate_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::serve {

std::optional<std::chrono::seconds> rate_limiter::take(const std::string& user, clock::time_point now) {
  if (per_second_ <= 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto [it, fresh] = buckets_.try_emplace(user, bucket{burst_, now});
  bucket& b = it->second;
  if (!fresh && now > b.at) {
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(burst_, b.tokens + elapsed * per_second_);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  const double wait = (1 - b.tokens) / per_second_;
  return std::chrono::seconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(wait))));
}

}  // namespace troupe::serve
