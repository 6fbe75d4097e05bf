#include "runtime/llm/wire/sse_parser.hpp"

#include <algorithm>
#include <charconv>

namespace troupe {

void sse_parser::field(std::string_view l) {
  if (l.front() == ':') return;  // a comment
  std::string_view name = l;
  std::string_view value;
  if (const auto colon = l.find(':'); colon != std::string_view::npos) {
    name = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "data") {
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (name == "event") {
    type_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
  } else if (name == "retry") {
    if (!value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      std::int64_t ms = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), ms).ec == std::errc{}) retry_ms_ = ms;
    }
  }
  // Any other field is ignored, as the specification says.
}

}  // namespace troupe
