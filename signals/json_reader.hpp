#pragma once
// Reads the fields of one JSON object and remembers the first thing that was
// wrong, with its full path. Decoders read every field they need and check
// ok() once at the end, which keeps them flat and readable:
//
//   json_reader r(v, "data");
//   auto id = r.string("call_id");
//   auto n = r.optional_int("max_tokens");
//   if (!r.ok()) return r.error();

#include "signals/decode_error.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

class json_reader {
 public:
  // `path` names `v` in error messages ("" for the document root).
  json_reader(const boost::json::value& v, std::string path);
  json_reader(const boost::json::object& o, std::string path);

  bool ok() const { return !error_; }
  const decode_error& error() const { return *error_; }
  const std::string& path() const { return path_; }
  // The object being read; null when the value was not an object.
  const boost::json::object* source() const { return object_; }

  // Required fields: a missing field or a wrong type records an error and
  // returns an empty value.
  std::string string(std::string_view key);
  std::int64_t int64(std::string_view key);
  double number(std::string_view key);
  bool boolean(std::string_view key);
  boost::json::object object(std::string_view key);
  boost::json::array array(std::string_view key);
  const boost::json::value& value(std::string_view key);

  // Optional fields: absent or null gives nullopt; a wrong type is an error.
  std::optional<std::string> optional_string(std::string_view key);
  std::optional<std::int64_t> optional_int64(std::string_view key);
  std::optional<double> optional_number(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  std::optional<boost::json::object> optional_object(std::string_view key);
  std::optional<boost::json::array> optional_array(std::string_view key);
  const boost::json::value* optional_value(std::string_view key);

  // True when the key is present, even with a null value.
  bool has(std::string_view key) const { return object_ && object_->contains(key); }

  std::string field_path(std::string_view key) const;
  // Records an error for `key` unless an earlier one was recorded.
  void fail(std::string_view key, std::string message);
  // Adopts an error from a nested decoder (its path is already complete).
  void fail(decode_error e);

 private:
  // A required key that is missing records an error; an optional key that is
  // null counts as absent.
  const boost::json::value* find(std::string_view key, bool required);
  template <class Extract>
  auto read(std::string_view key, bool required, Extract extract, const char* expected);

  const boost::json::object* object_ = nullptr;
  std::string path_;
  std::optional<decode_error> error_;
};

// "entries" + 3 -> "entries[3]"; used for array elements in error paths.
std::string element_path(std::string_view array_path, std::size_t index);

}  // namespace troupe
