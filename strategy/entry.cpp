#include "strategy/entry.hpp"

#include "signals/json_text.hpp"
#include "strategy/token_estimator.hpp"

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

std::int64_t estimate_tokens(std::string_view kind, const boost::json::object& payload) {
  const token_estimator& e = default_estimator();
  std::int64_t n = e.per_message();
  if (kind == entry_kind::message || kind == entry_kind::summary) {
    n += e.text(string_field(payload, "content").value_or(""));
  } else {
    // Tool calls and results are sent as their JSON.
    n += e.text(json_text(payload));
  }
  return n;
}

}  // namespace troupe
