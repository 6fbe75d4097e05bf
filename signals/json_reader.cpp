#include "signals/json_reader.hpp"

namespace troupe {

namespace json = boost::json;

namespace {
const json::value null_value;
}

json_reader::json_reader(const json::value& v, std::string path) : path_(std::move(path)) {
  object_ = v.if_object();
  if (!object_) error_ = decode_error{path_, "expected an object"};
}

json_reader::json_reader(const json::object& o, std::string path) : object_(&o), path_(std::move(path)) {}

std::string json_reader::field_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void json_reader::fail(std::string_view key, std::string message) {
  if (!error_) error_ = decode_error{field_path(key), std::move(message)};
}

void json_reader::fail(decode_error e) {
  if (!error_) error_ = std::move(e);
}

const json::value* json_reader::find(std::string_view key, bool required) {
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
auto json_reader::read(std::string_view key, bool required, Extract extract, const char* expected) {
  using result = std::invoke_result_t<Extract, const json::value&>;
  const json::value* v = find(key, required);
  if (!v) return result{};
  result x = extract(*v);
  if (!x) fail(key, expected);
  return x;
}

std::optional<std::string> json_reader::optional_string(std::string_view key) {
  return read(key, false, extract_string, "expected a string");
}
std::optional<std::int64_t> json_reader::optional_int64(std::string_view key) {
  return read(key, false, as_int64, "expected an integer");
}
std::optional<double> json_reader::optional_number(std::string_view key) {
  return read(key, false, extract_number, "expected a number");
}
std::optional<bool> json_reader::optional_boolean(std::string_view key) {
  return read(key, false, extract_bool, "expected true or false");
}
std::optional<json::object> json_reader::optional_object(std::string_view key) {
  return read(key, false, extract_object, "expected an object");
}
std::optional<json::array> json_reader::optional_array(std::string_view key) {
  return read(key, false, extract_array, "expected an array");
}
const json::value* json_reader::optional_value(std::string_view key) { return find(key, false); }

std::string json_reader::string(std::string_view key) {
  return read(key, true, extract_string, "expected a string").value_or(std::string{});
}
std::int64_t json_reader::int64(std::string_view key) {
  return read(key, true, as_int64, "expected an integer").value_or(0);
}
double json_reader::number(std::string_view key) {
  return read(key, true, extract_number, "expected a number").value_or(0.0);
}
bool json_reader::boolean(std::string_view key) {
  return read(key, true, extract_bool, "expected true or false").value_or(false);
}
json::object json_reader::object(std::string_view key) {
  return read(key, true, extract_object, "expected an object").value_or(json::object{});
}
json::array json_reader::array(std::string_view key) {
  return read(key, true, extract_array, "expected an array").value_or(json::array{});
}
const json::value& json_reader::value(std::string_view key) {
  const json::value* v = find(key, true);
  return v ? *v : null_value;
}

std::string element_path(std::string_view array_path, std::size_t index) {
  return std::string(array_path) + "[" + std::to_string(index) + "]";
}

}  // namespace troupe
