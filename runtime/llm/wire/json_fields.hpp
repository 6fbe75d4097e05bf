#pragma once
// The one way troupe reads a field of a model's response. A model server is
// outside our control: any field may be missing, null, of another type or a
// number that does not fit (an index of -1, a count of 1e300). Reading one
// never throws (Boost.JSON's as_* and to_number<T>() without an error code
// do, and a throw inside curl's write callback would abort the process);
// instead the first field that is there but wrong is remembered, with its
// path, so that the decoder can end the call with a malformed_response.
//
//   json_problem problem;
//   const json_fields chunk(o, "", problem);
//   auto index = chunk.integer<std::size_t>("index", 0, 1024);
//   if (problem) return malformed(*problem);
//
// Absent and null read as "not there" (servers send "content": null), never
// as a problem.

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

// The first thing wrong in one response (or one streamed chunk).
using json_problem = std::optional<std::string>;

class json_fields {
 public:
  // `path` names `o` in problems ("" for the document, "choices[0].delta").
  json_fields(const boost::json::object& o, std::string path, json_problem& problem)
      : object_(&o), path_(std::move(path)), problem_(&problem) {}

  const boost::json::object& source() const { return *object_; }

  // A string field; nullopt when absent, null or not a string (a problem).
  std::optional<std::string_view> string(std::string_view key) const;
  // The same, "" for anything but a string.
  std::string_view text(std::string_view key) const { return string(key).value_or(std::string_view{}); }

  // An integer field in [min, max]: a fraction, a number out of the range or
  // not a number is a problem, and nullopt.
  template <std::integral I>
  std::optional<I> integer(std::string_view key, I min = std::numeric_limits<I>::min(),
                           I max = std::numeric_limits<I>::max()) const {
    const boost::json::value* v = present(key);
    if (!v) return std::nullopt;
    if (const auto n = exact_integer(*v)) {
      const auto in_range = [&](auto x) { return !std::cmp_less(x, min) && !std::cmp_greater(x, max); };
      if (std::visit(in_range, *n)) return std::visit([](auto x) { return static_cast<I>(x); }, *n);
    }
    note(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }

  // An object field, read the same way; nullopt when absent, null or not an object.
  std::optional<json_fields> object(std::string_view key) const;
  // An array field; null when absent, null or not an array (a problem).
  const boost::json::array* array(std::string_view key) const;
  // Element `index` of `items` (an array read from this object's `key`) as an
  // object; nullopt, and a problem, when it is not one.
  std::optional<json_fields> element(const boost::json::array& items, std::string_view key, std::size_t index) const;
  // Any value, unchecked; null when absent or null.
  const boost::json::value* value(std::string_view key) const { return present(key); }

  // Records a problem with `key` unless an earlier one was recorded.
  void note(std::string_view key, std::string_view what) const;

 private:
  const boost::json::value* present(std::string_view key) const;
  // The integer a number holds exactly: any int64 or uint64, and a double
  // only up to 2^53, beyond which it no longer names one integer (Boost.JSON's
  // to_number would take 1e18 for exactly 10^18).
  static std::optional<std::variant<std::int64_t, std::uint64_t>> exact_integer(const boost::json::value& v);
  std::string path_of(std::string_view key) const;

  const boost::json::object* object_;
  std::string path_;
  json_problem* problem_;
};

}  // namespace troupe
