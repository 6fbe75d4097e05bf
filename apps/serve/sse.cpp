#include "apps/serve/sse.hpp"

#include "json/json_text.hpp"

namespace troupe::serve {

sse_event make_event(std::uint64_t id, std::string name, const boost::json::value& data) {
  // Boost.JSON escapes control characters, so the data is one line.
  return {id, std::move(name), json_text(data)};
}

std::string format_sse(const sse_event& e) {
  std::string out;
  out.reserve(e.name.size() + e.data.size() + 40);
  // Without a name and an id, a data line alone (OpenAI's stream format).
  if (!e.name.empty()) {
    out += "event: ";
    out += e.name;
    out += '\n';
  }
  if (e.id != 0) {
    out += "id: ";
    out += std::to_string(e.id);
    out += '\n';
  }
  out += "data: ";
  out += e.data;
  out += "\n\n";
  return out;
}

}  // namespace troupe::serve
