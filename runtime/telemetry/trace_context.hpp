#pragma once
// Where a piece of work sits in a distributed trace, and its W3C Trace
// Context form (`traceparent: 00-<trace id>-<span id>-<flags>`), the header
// that lets a caller's trace continue through troupe and troupe's continue
// through the servers it calls. Ids are numbers, made from random bits by
// the runtime; zero means "none", as W3C forbids all-zero ids.

#include "runtime/random_ids.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

struct span_context {
  std::uint64_t trace_high = 0;  // the trace id's first 8 bytes
  std::uint64_t trace_low = 0;
  std::uint64_t span_id = 0;
  std::uint8_t flags = 0;  // bit 0: sampled

  bool valid() const { return (trace_high | trace_low) != 0 && span_id != 0; }
  bool sampled() const { return (flags & 1) != 0; }
  friend bool operator==(const span_context&, const span_context&) = default;
};

// A context from a traceparent header; nullopt when it does not parse, as
// the standard asks (the receiver then starts a trace of its own).
std::optional<span_context> parse_traceparent(std::string_view header);
std::string format_traceparent(const span_context& c);

// A new span: in the trace of `parent` when it is valid, else in a new trace
// (sampled as `sample_new` says).
span_context child_span(const span_context& parent, random_ids& ids, bool sample_new);
// A span id that is never zero.
std::uint64_t new_span_id(random_ids& ids);

// Lower-case hex, as traceparent and OTLP/JSON write ids: 32 digits for the
// trace id, 16 for a span id.
std::string trace_id_hex(const span_context& c);
std::string span_id_hex(std::uint64_t span_id);

}  // namespace troupe
