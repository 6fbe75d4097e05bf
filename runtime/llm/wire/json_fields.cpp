#include "runtime/llm/wire/json_fields.hpp"

#include "signals/json_reader.hpp"

#include <cmath>

namespace troupe {

namespace json = boost::json;

const json::value* json_fields::present(std::string_view key) const {
  const json::value* v = object_->if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string json_fields::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void json_fields::note(std::string_view key, std::string_view what) const {
  if (!*problem_) *problem_ = path_of(key) + ": " + std::string(what);
}

std::optional<std::variant<std::int64_t, std::uint64_t>> json_fields::exact_integer(const json::value& v) {
  if (const auto* i = v.if_int64()) return *i;
  if (const auto* u = v.if_uint64()) return *u;
  constexpr double exact_limit = 9007199254740992.0;
  if (const auto* d = v.if_double(); d && std::trunc(*d) == *d && std::fabs(*d) <= exact_limit)
    return static_cast<std::int64_t>(*d);
  return std::nullopt;
}

std::optional<std::string_view> json_fields::string(std::string_view key) const {
  const json::value* v = present(key);
  if (!v) return std::nullopt;
  if (const auto* s = v->if_string()) return std::string_view(*s);
  note(key, "expected a string");
  return std::nullopt;
}

std::optional<json_fields> json_fields::object(std::string_view key) const {
  const json::value* v = present(key);
  if (!v) return std::nullopt;
  if (const auto* o = v->if_object()) return json_fields(*o, path_of(key), *problem_);
  note(key, "expected an object");
  return std::nullopt;
}

const json::array* json_fields::array(std::string_view key) const {
  const json::value* v = present(key);
  if (!v) return nullptr;
  if (const auto* a = v->if_array()) return a;
  note(key, "expected an array");
  return nullptr;
}

std::optional<json_fields> json_fields::element(const json::array& items, std::string_view key,
                                                std::size_t index) const {
  const std::string at = element_path(key, index);
  if (index < items.size())
    if (const auto* o = items[index].if_object()) return json_fields(*o, path_of(at), *problem_);
  note(at, "expected an object");
  return std::nullopt;
}

}  // namespace troupe
