#include "apps/serve/event_position.hpp"

namespace troupe::serve {

namespace {

// `at`, moved on past any UTF-8 continuation bytes to a character's start.
std::size_t character_start(std::string_view s, std::size_t at) {
  while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) ++at;
  return at;
}

}  // namespace

std::pair<std::string, std::string> unseen_delta(std::string_view thinking, std::string_view text, std::uint64_t seen) {
  if (seen <= thinking.size()) {
    const std::size_t from = character_start(thinking, static_cast<std::size_t>(seen));
    return {std::string(thinking.substr(from)), std::string(text)};
  }
  const std::uint64_t into_text = seen - thinking.size();
  if (into_text >= text.size()) return {};
  return {std::string(), std::string(text.substr(character_start(text, static_cast<std::size_t>(into_text))))};
}

}  // namespace troupe::serve
