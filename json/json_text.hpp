#pragma once
// JSON as troupe writes it, on screen and in storage: Boost.JSON's
// serializer writes doubles in scientific notation (0.0303 as 3.03E-2, 24.6
// as 2.46E1), which people misread and jq passes on. Here a double is the
// shortest decimal that reads back as the same double, with ".0" on an
// integral one so that it reads back as a double and not an integer;
// everything else is written exactly as boost::json::serialize writes it.
// A double JSON cannot hold (NaN, infinity) is written as null, where Boost
// writes NaN or Infinity, which no JSON reader accepts; a string that is not
// UTF-8 is written with U+FFFD for each ill-formed sequence, where Boost
// copies the bytes, which no JSON reader accepts either (utf8.hpp).

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace troupe {

std::string json_text(const boost::json::value& v);
// The same, without first copying an object, array or string into a value.
std::string json_text(const boost::json::object& o);
std::string json_text(const boost::json::array& a);
std::string json_text(const boost::json::string& s);

// Appends the text of `v` to `out`.
void append_json_text(std::string& out, const boost::json::value& v);
// Appends one string (quoted and escaped) or one double, as above: for
// writers that stream JSON without building a value first.
void append_json_string(std::string& out, std::string_view s);
void append_json_double(std::string& out, double d);

// How many bytes append_json_string writes for `s`, the quotes included,
// without writing them; none when `s` is not UTF-8 (what is written then
// depends on the repair).
std::optional<std::size_t> json_string_size(std::string_view s) noexcept;

}  // namespace troupe
