#include "json/utf8.hpp"

#include <utf8.h>

#include <cstdint>
#include <cstring>

namespace troupe {

namespace json = boost::json;

// Most text is ASCII: eight bytes at a time while no byte has its high bit
// set, and the full check (a code point at a time) from the first that has.
bool is_valid_utf8(std::string_view text) noexcept {
  const char* p = text.data();
  const char* const end = p + text.size();
  constexpr std::uint64_t high_bits = 0x8080808080808080ULL;
  for (; end - p >= 8; p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    if (word & high_bits) break;
  }
  return utf8::is_valid(p, end);
}

std::size_t utf8_sequence_at(std::string_view text, std::size_t at) noexcept {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = lead < 0x80   ? 1
                             : lead < 0xC2 ? 0
                             : lead < 0xE0 ? 2
                             : lead < 0xF0 ? 3
                             : lead < 0xF5 ? 4
                                           : 0;
  if (length <= 1 || at + length > text.size()) return length == 1 ? 1 : 0;
  const auto begin = text.begin() + static_cast<std::ptrdiff_t>(at);
  return utf8::is_valid(begin, begin + static_cast<std::ptrdiff_t>(length)) ? length : 0;
}

void append_valid_utf8(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size());
  utf8::replace_invalid(text.begin(), text.end(), std::back_inserter(out));
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  append_valid_utf8(out, text);
  return out;
}

bool repair_utf8(std::string& text) {
  if (is_valid_utf8(text)) return false;
  text = valid_utf8(text);
  return true;
}

namespace {

bool repair_string(json::string& s) {
  if (is_valid_utf8(s)) return false;
  s = valid_utf8(s);
  return true;
}

}  // namespace

bool repair_utf8(json::object& o) {
  bool repaired = false;
  bool bad_key = false;
  for (auto& kv : o) {
    repaired |= repair_utf8(kv.value());
    bad_key |= !is_valid_utf8(kv.key());
  }
  if (!bad_key) return repaired;
  // Keys cannot change in place: the object is built again, in its order.
  // Two keys that repair to the same text keep the later value.
  json::object mended(o.storage());
  mended.reserve(o.size());
  for (auto& kv : o) mended[valid_utf8(kv.key())] = std::move(kv.value());
  o = std::move(mended);
  return true;
}

bool repair_utf8(json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return repair_string(v.get_string());
    case json::kind::array: {
      bool repaired = false;
      for (json::value& x : v.get_array()) repaired |= repair_utf8(x);
      return repaired;
    }
    case json::kind::object:
      return repair_utf8(v.get_object());
    default:
      return false;
  }
}

}  // namespace troupe
