#pragma once
// Reads the fields of one JSON object and remembers the first thing that was
// wrong, with its full path. Decoders read every field they need and check
// ok() once at the end, which keeps them flat and readable:
//
//   json_reader r(v, "data");
//   auto id = r.string("call_id");
//   auto n = r.optional_int64("max_tokens");
//   if (!r.ok()) return r.error();
//
// Reading never throws (Boost.JSON's as_* and to_number<T>() without an
// error code do; a throw inside curl's write callback would abort the
// process), so it serves bytes from outside our control too, such as a model
// server's stream, where any field may be missing, null, of another type or a
// number that does not fit. For those, `text`, `optional_text`, `integer`,
// `nested`, `find_array` and `element` read in place, without copies.
//
// A nested reader (`nested`, `element`) reports to the same place as the
// reader that made it: to that reader's sink if it was given one, else to
// that reader itself, which must then outlive it.

#include "json/decode_error.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace troupe {

class json_reader {
 public:
  // `path` names `v` in error messages ("" for the document root).
  json_reader(const boost::json::value& v, std::string path);
  json_reader(const boost::json::object& o, std::string path);
  // Reports its first error (and its nested readers') to `sink` instead.
  json_reader(const boost::json::object& o, std::string path, std::optional<decode_error>& sink);

  json_reader(const json_reader& other);
  json_reader& operator=(const json_reader& other);

  bool ok() const { return !*error_; }
  const decode_error& error() const { return **error_; }
  const std::string& path() const { return path_; }
  // The object being read; null when the value was not an object.
  const boost::json::object* source() const { return object_; }

  // Required fields: a missing field or a wrong type records an error and
  // returns an empty value.
  std::string string(std::string_view key) const;
  std::int64_t int64(std::string_view key) const;
  double number(std::string_view key) const;
  bool boolean(std::string_view key) const;
  boost::json::object object(std::string_view key) const;
  boost::json::array array(std::string_view key) const;
  const boost::json::value& value(std::string_view key) const;

  // Optional fields: absent or null gives nullopt; a wrong type is an error.
  std::optional<std::string> optional_string(std::string_view key) const;
  std::optional<std::int64_t> optional_int64(std::string_view key) const;
  std::optional<double> optional_number(std::string_view key) const;
  std::optional<bool> optional_boolean(std::string_view key) const;
  std::optional<boost::json::object> optional_object(std::string_view key) const;
  std::optional<boost::json::array> optional_array(std::string_view key) const;
  const boost::json::value* optional_value(std::string_view key) const;

  // Optional fields read in place, valid as long as the document.
  std::optional<std::string_view> optional_text(std::string_view key) const;
  // The same, "" when absent or null (or of the wrong type, an error).
  std::string_view text(std::string_view key) const { return optional_text(key).value_or(std::string_view{}); }
  // An integer in [min, max]: a fraction, a number out of the range or not a
  // number is an error, and nullopt.
  template <std::integral I>
  std::optional<I> integer(std::string_view key, I min = std::numeric_limits<I>::min(),
                           I max = std::numeric_limits<I>::max()) const {
    const boost::json::value* v = find(key, false);
    if (!v) return std::nullopt;
    if (const auto n = exact_integer(*v)) {
      const auto in_range = [&](auto x) { return !std::cmp_less(x, min) && !std::cmp_greater(x, max); };
      if (std::visit(in_range, *n)) return std::visit([](auto x) { return static_cast<I>(x); }, *n);
    }
    fail(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  // An object field as a reader of its own; nullopt when absent or null.
  std::optional<json_reader> nested(std::string_view key) const;
  // An array field; null when absent or null (or not an array, an error).
  const boost::json::array* find_array(std::string_view key) const;
  // Element `index` of `items` (the array this reader's `key` holds) as an
  // object; nullopt, and an error, when it is not one.
  std::optional<json_reader> element(const boost::json::array& items, std::string_view key, std::size_t index) const;

  // True when the key is present, even with a null value.
  bool has(std::string_view key) const { return object_ && object_->contains(key); }

  std::string field_path(std::string_view key) const;
  // Records an error for `key` unless an earlier one was recorded.
  void fail(std::string_view key, std::string message) const;
  // Adopts an error from a nested decoder (its path is already complete).
  void fail(decode_error e) const;

 private:
  json_reader(const boost::json::object& o, std::string path, std::optional<decode_error>* sink);
  // A required key that is missing records an error; an optional key that is
  // null counts as absent.
  const boost::json::value* find(std::string_view key, bool required) const;
  template <class Extract>
  auto read(std::string_view key, bool required, Extract extract, const char* expected) const;
  // The integer a number holds exactly: any int64 or uint64, and a double
  // only up to 2^53, beyond which it no longer names one integer (Boost.JSON's
  // to_number would take 1e18 for exactly 10^18).
  static std::optional<std::variant<std::int64_t, std::uint64_t>> exact_integer(const boost::json::value& v);

  const boost::json::object* object_ = nullptr;
  std::string path_;
  std::optional<decode_error> own_error_;
  std::optional<decode_error>* error_ = &own_error_;  // &own_error_ or a sink
};

// "entries" + 3 -> "entries[3]"; used for array elements in error paths.
std::string element_path(std::string_view array_path, std::size_t index);

}  // namespace troupe
