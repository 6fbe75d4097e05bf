#pragma once
// JSON text as a value, as boost::json::parse reads it (the same options,
// errors and integers), except for what Boost.JSON 1.81 gets wrong about
// doubles. Its parser is not correctly rounded: about one double in ten
// reads back a unit in the last place off (14.127156320378683 becomes
// 14.127156320378685), so a thread written as json_text writes it (the
// shortest text that reads back as the same double) would not read back as
// it was. Here every number with a fraction or an exponent, or too big for
// 64 bits, is read with std::from_chars, which is correctly rounded, so
// reading what json_text wrote gives back the same bits.
//
// A number beyond a double's range (1e400) is an error, number_out_of_range:
// Boost.JSON makes it infinity, which JSON cannot hold (json_text writes it
// as null), so the value would change silently on its first round trip.
// The error's message says so, and the callers that report a parse error
// show the text it came from. A number too small for a double (1e-400)
// reads as zero of its sign, which is its correctly rounded value.

#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <string_view>

namespace troupe {

enum class json_parse_error { number_out_of_range = 1 };

boost::system::error_code make_error_code(json_parse_error e);

// On an error, `ec` says which and the value is null.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              const boost::json::parse_options& options = {});
// Throws boost::system::system_error, as boost::json::parse does.
boost::json::value parse_json(std::string_view text, const boost::json::parse_options& options = {});

}  // namespace troupe

template <>
struct boost::system::is_error_code_enum<troupe::json_parse_error> : std::true_type {};
