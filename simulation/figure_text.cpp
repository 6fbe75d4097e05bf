#include "simulation/figure_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace troupe {

std::string grouped(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -(n + 1) + 1ULL : static_cast<unsigned long long>(n));
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string grouped(double n) {
  if (!std::isfinite(n)) return "?";
  return grouped(static_cast<std::int64_t>(std::llround(n)));
}

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string dollars(double d) {
  if (!std::isfinite(d)) return "?";
  if (d == 0) return "$0";
  if (std::fabs(d) >= 1) return "$" + fixed(d, 2);
  // Three significant digits: $0.0123, $0.000456.
  const int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(std::fabs(d)))));
  return "$" + fixed(d, decimals);
}

}  // namespace troupe
