#include "apps/serve/sse.hpp"

#include <boost/json/serialize.hpp>

namespace troupe::serve {

sse_event make_event(std::uint64_t id, std::string name, const boost::json::value& data) {
  // Boost.JSON escapes control characters, so the data is one line.
  return {id, std::move(name), boost::json::serialize(data)};
}

std::string format_sse(const sse_event& e) {
  std::string out;
  out.reserve(e.name.size() + e.data.size() + 40);
  out += "event: ";
  out += e.name;
  out += "\nid: ";
  out += std::to_string(e.id);
  out += "\ndata: ";
  out += e.data;
  out += "\n\n";
  return out;
}

}  // namespace troupe::serve
