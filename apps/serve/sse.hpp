#pragma once
// One server-sent event as it goes on the wire: `event: NAME`, `id: N`,
// `data: JSON` on one line, and a blank line.

#include <boost/json/value.hpp>

#include <cstdint>
#include <string>

namespace troupe::serve {

struct sse_event {
  std::uint64_t id = 0;  // the turn's event number, from 1
  std::string name;      // conversation, message.delta, tool.started, …
  std::string data;      // serialized JSON, one line
};

sse_event make_event(std::uint64_t id, std::string name, const boost::json::value& data);
std::string format_sse(const sse_event& e);

}  // namespace troupe::serve
