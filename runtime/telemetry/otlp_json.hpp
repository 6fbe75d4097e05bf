#pragma once
// Spans as the body of an OTLP/HTTP export in its JSON encoding: an
// ExportTraceServiceRequest (resourceSpans → scopeSpans → spans). The JSON
// encoding differs from protobuf's usual JSON mapping in ways collectors
// insist on: ids are lower-case hex (not base64), 64-bit integers (times,
// intValue) are strings, and enums (kind, status code) are numbers.

#include "runtime/telemetry/span.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct otlp_resource {
  std::vector<span_attribute> attributes;  // service.name, …
  std::string scope_name;                  // the instrumentation scope
  std::string scope_version;
};

std::string otlp_traces_json(const otlp_resource& resource, const std::vector<span>& spans);

}  // namespace troupe
