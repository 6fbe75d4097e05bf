#pragma once
// The typed error every JSON decoder in troupe returns: which field was wrong
// and why. Decoders never throw on bad input and never fill in silent defaults.

#include <boost/assert/source_location.hpp>
#include <boost/system/result.hpp>

#include <string>

namespace troupe {

struct decode_error {
  std::string field;    // dotted path from the document root, e.g. "data.call_id"
  std::string message;  // what was expected, e.g. "expected a string"

  std::string describe() const { return field.empty() ? message : field + ": " + message; }
  friend bool operator==(const decode_error&, const decode_error&) = default;
};

// Calling .value() on a failed decode throws this, carrying the same text.
struct decode_exception : std::runtime_error {
  explicit decode_exception(decode_error e) : std::runtime_error(e.describe()), error(std::move(e)) {}
  decode_error error;
};

// Found by boost::system::result through argument-dependent lookup.
[[noreturn]] inline void throw_exception_from_error(const decode_error& e, const boost::source_location&) {
  throw decode_exception(e);
}

template <class T>
using decoded = boost::system::result<T, decode_error>;

}  // namespace troupe
