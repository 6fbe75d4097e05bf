#pragma once
// Small text helpers the runtime shares: text cut to fit a line, ASCII case
// folding (header names, error codes) and trimming.

#include "json/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace troupe {

// Text cut to fit a line: at most `max_bytes` bytes of the text, never inside
// a character, with "…" where it was cut. Always valid UTF-8, whatever came
// in (a proxy's Latin-1 error page is quoted with U+FFFD for its accents).
inline std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return valid_utf8(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  return valid_utf8(text.substr(0, cut)) + "\xE2\x80\xA6";
}

// ASCII letters in lower case; other bytes as they are.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Without spaces, tabs and line ends at either end.
inline std::string_view trimmed(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace troupe
