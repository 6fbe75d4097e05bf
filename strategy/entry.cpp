#include "strategy/entry.hpp"

namespace troupe {

std::optional<std::string_view> string_field(const boost::json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key))
    if (const auto* s = v->if_string()) return std::string_view(*s);
  return std::nullopt;
}

std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key)) {
    boost::system::error_code ec;
    const auto n = v->to_number<std::int64_t>(ec);
    if (!ec) return n;
  }
  return std::nullopt;
}

}  // namespace troupe
