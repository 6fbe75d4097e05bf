#pragma once
// Text cut to fit a line: at most `max_bytes` bytes of UTF-8, never inside a
// character, with "…" where it was cut.

#include <cstddef>
#include <string>
#include <string_view>

namespace troupe {

inline std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  return std::string(text.substr(0, cut)) + "\xE2\x80\xA6";
}

}  // namespace troupe
