#pragma once
// Every text troupe writes is valid UTF-8. JSON readers, HTTP clients and
// PostgreSQL refuse anything else, so one stray byte committed to a thread
// would make every later load of it fail. Bytes from outside (a model's
// error body, a tool's output, a terminal in another locale) are checked
// where they enter; what is not UTF-8 is repaired: each ill-formed sequence
// becomes U+FFFD, as a reader following the Unicode standard would show it.
// Names and ids are not repaired but refused, since a repaired id would name
// something else.

#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace troupe {

bool is_valid_utf8(std::string_view text) noexcept;

// The length of the well-formed UTF-8 sequence that starts at text[at]
// (1 to 4), or 0 if none does: a stray continuation byte, a sequence cut
// short, an overlong form, a surrogate or a code point past U+10FFFF.
std::size_t utf8_sequence_at(std::string_view text, std::size_t at) noexcept;

// Appends `text` with every ill-formed sequence replaced by U+FFFD.
void append_valid_utf8(std::string& out, std::string_view text);
std::string valid_utf8(std::string_view text);

// In place: true if anything was replaced. Strings untouched when valid.
bool repair_utf8(std::string& text);
// Every string and every key of a JSON value.
bool repair_utf8(boost::json::value& v);
bool repair_utf8(boost::json::object& o);

}  // namespace troupe
