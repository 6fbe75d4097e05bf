#pragma once
// Signals on the wire, in the shape of a CloudEvents 1.0 JSON event:
//
//   {"specversion": "1.0", "id": "...", "source": "/agents/a1",
//    "type": "troupe.agent.query", "subject": "thread-7",
//    "time": "2026-11-21T06:45:00.123Z", "datacontenttype": "application/json",
//    "data": {...}}
//
// Only the producer knows the id, the source and the time, so they are given
// explicitly: nothing here reads a clock or makes an id.

#include "json/decode_error.hpp"
#include "signals/signal.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

struct envelope {
  std::string id;
  std::string source;
  std::string subject;                  // optional in CloudEvents; empty: left out
  std::optional<std::int64_t> time_ms;  // Unix milliseconds; written as RFC 3339
  signal data;
};

boost::json::value to_json(const envelope& e);

// Checks the CloudEvents attributes (specversion must be "1.0", the content
// type JSON) and decodes `data` by `type`. An unknown type, a missing field or
// a field of the wrong type is a decode_error naming the field.
decoded<envelope> decode_envelope(const boost::json::value& v);
// Parses text first; malformed JSON is a decode_error too.
decoded<envelope> parse_envelope(std::string_view text);

// RFC 3339 in UTC with milliseconds, "1970-01-01T00:00:00.000Z".
std::string format_rfc3339(std::int64_t unix_ms);
// Accepts any RFC 3339 timestamp (offsets, fractions of any length).
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

}  // namespace troupe
