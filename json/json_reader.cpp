#include "json/json_reader.hpp"

#include <cmath>

namespace troupe {

namespace json = boost::json;

namespace {
const json::value null_value;
}

json_reader::json_reader(const json::value& v, std::string path) : path_(std::move(path)) {
  object_ = v.if_object();
  if (!object_) own_error_ = decode_error{path_, "expected an object"};
}

json_reader::json_reader(const json::object& o, std::string path) : object_(&o), path_(std::move(path)) {}

json_reader::json_reader(const json::object& o, std::string path, std::optional<decode_error>& sink)
    : json_reader(o, std::move(path), &sink) {}

json_reader::json_reader(const json::object& o, std::string path, std::optional<decode_error>* sink)
    : object_(&o), path_(std::move(path)), error_(sink) {}

// A copy of a reader that keeps its own error keeps a copy of it; a copy of
// one that reports elsewhere reports there too.
json_reader::json_reader(const json_reader& other)
    : object_(other.object_),
      path_(other.path_),
      own_error_(other.own_error_),
      error_(other.error_ == &other.own_error_ ? &own_error_ : other.error_) {}

json_reader& json_reader::operator=(const json_reader& other) {
  if (this == &other) return *this;
  object_ = other.object_;
  path_ = other.path_;
  own_error_ = other.own_error_;
  error_ = other.error_ == &other.own_error_ ? &own_error_ : other.error_;
  return *this;
}

std::string json_reader::field_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void json_reader::fail(std::string_view key, std::string message) const {
  if (!*error_) *error_ = decode_error{field_path(key), std::move(message)};
}

void json_reader::fail(decode_error e) const {
  if (!*error_) *error_ = std::move(e);
}

const json::value* json_reader::find(std::string_view key, bool required) const {
  if (!object_) return nullptr;
  const json::value* v = object_->if_contains(key);
  if (v && v->is_null() && !required) return nullptr;
  if (!v && required) fail(key, "is required");
  return v;
}

namespace {
// Boost.JSON stores integers as int64 or uint64 and may store 3.0 as a double;
// accept any number that is exactly an integer.
std::optional<std::int64_t> as_int64(const json::value& v) {
  boost::system::error_code ec;
  auto n = v.to_number<std::int64_t>(ec);
  if (ec) return std::nullopt;
  return n;
}

// Extractors return nullopt when the value has the wrong type.
std::optional<std::string> extract_string(const json::value& v) {
  if (const json::string* s = v.if_string()) return std::string(*s);
  return std::nullopt;
}
std::optional<double> extract_number(const json::value& v) {
  if (v.is_number()) return v.to_number<double>();
  return std::nullopt;
}
std::optional<bool> extract_bool(const json::value& v) {
  if (const bool* b = v.if_bool()) return *b;
  return std::nullopt;
}
std::optional<json::object> extract_object(const json::value& v) {
  if (const json::object* o = v.if_object()) return *o;
  return std::nullopt;
}
std::optional<json::array> extract_array(const json::value& v) {
  if (const json::array* a = v.if_array()) return *a;
  return std::nullopt;
}

}  // namespace

template <class Extract>
auto json_reader::read(std::string_view key, bool required, Extract extract, const char* expected) const {
  using result = std::invoke_result_t<Extract, const json::value&>;
  const json::value* v = find(key, required);
  if (!v) return result{};
  result x = extract(*v);
  if (!x) fail(key, expected);
  return x;
}

std::optional<std::string> json_reader::optional_string(std::string_view key) const {
  return read(key, false, extract_string, "expected a string");
}
std::optional<std::int64_t> json_reader::optional_int64(std::string_view key) const {
  return read(key, false, as_int64, "expected an integer");
}
std::optional<double> json_reader::optional_number(std::string_view key) const {
  return read(key, false, extract_number, "expected a number");
}
std::optional<bool> json_reader::optional_boolean(std::string_view key) const {
  return read(key, false, extract_bool, "expected true or false");
}
std::optional<json::object> json_reader::optional_object(std::string_view key) const {
  return read(key, false, extract_object, "expected an object");
}
std::optional<json::array> json_reader::optional_array(std::string_view key) const {
  return read(key, false, extract_array, "expected an array");
}
const json::value* json_reader::optional_value(std::string_view key) const { return find(key, false); }

std::string json_reader::string(std::string_view key) const {
  return read(key, true, extract_string, "expected a string").value_or(std::string{});
}
std::int64_t json_reader::int64(std::string_view key) const {
  return read(key, true, as_int64, "expected an integer").value_or(0);
}
double json_reader::number(std::string_view key) const {
  return read(key, true, extract_number, "expected a number").value_or(0.0);
}
bool json_reader::boolean(std::string_view key) const {
  return read(key, true, extract_bool, "expected true or false").value_or(false);
}
json::object json_reader::object(std::string_view key) const {
  return read(key, true, extract_object, "expected an object").value_or(json::object{});
}
json::array json_reader::array(std::string_view key) const {
  return read(key, true, extract_array, "expected an array").value_or(json::array{});
}
const json::value& json_reader::value(std::string_view key) const {
  const json::value* v = find(key, true);
  return v ? *v : null_value;
}

std::optional<std::variant<std::int64_t, std::uint64_t>> json_reader::exact_integer(const json::value& v) {
  if (const auto* i = v.if_int64()) return *i;
  if (const auto* u = v.if_uint64()) return *u;
  constexpr double exact_limit = 9007199254740992.0;
  if (const auto* d = v.if_double(); d && std::trunc(*d) == *d && std::fabs(*d) <= exact_limit)
    return static_cast<std::int64_t>(*d);
  return std::nullopt;
}

std::optional<std::string_view> json_reader::optional_text(std::string_view key) const {
  const json::value* v = find(key, false);
  if (!v) return std::nullopt;
  if (const auto* s = v->if_string()) return std::string_view(*s);
  fail(key, "expected a string");
  return std::nullopt;
}

std::optional<json_reader> json_reader::nested(std::string_view key) const {
  const json::value* v = find(key, false);
  if (!v) return std::nullopt;
  if (const auto* o = v->if_object()) return json_reader(*o, field_path(key), error_);
  fail(key, "expected an object");
  return std::nullopt;
}

const json::array* json_reader::find_array(std::string_view key) const {
  const json::value* v = find(key, false);
  if (!v) return nullptr;
  if (const auto* a = v->if_array()) return a;
  fail(key, "expected an array");
  return nullptr;
}

std::optional<json_reader> json_reader::element(const json::array& items, std::string_view key,
                                                std::size_t index) const {
  const std::string at = element_path(key, index);
  if (index < items.size())
    if (const auto* o = items[index].if_object()) return json_reader(*o, field_path(at), error_);
  fail(at, "expected an object");
  return std::nullopt;
}

std::string element_path(std::string_view array_path, std::size_t index) {
  return std::string(array_path) + "[" + std::to_string(index) + "]";
}

}  // namespace troupe
