#include "runtime/telemetry/otlp_json.hpp"

#include "base/overloaded.hpp"
#include "json/json_text.hpp"

#include <charconv>

namespace troupe {

namespace {

// Written straight into the body, without building a JSON value first: the
// exporter's thread shares the machine with the agents, and a value per
// attribute cost more than the writing itself.

void put_key(std::string& out, std::string_view key) {
  append_json_string(out, key);
  out.push_back(':');
}

// 64-bit integers are JSON strings in OTLP/JSON.
void put_int_string(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.push_back('"');
  out.append(buf, r.ptr);
  out.push_back('"');
}

void put_any_value(std::string& out, const attribute_value& v) {
  out.push_back('{');
  std::visit(overloaded{[&](const std::string& s) {
                          put_key(out, "stringValue");
                          append_json_string(out, s);
                        },
                        [&](std::int64_t i) {
                          put_key(out, "intValue");
                          put_int_string(out, i);
                        },
                        [&](double d) {
                          put_key(out, "doubleValue");
                          append_json_double(out, d);
                        },
                        [&](bool b) {
                          put_key(out, "boolValue");
                          out.append(b ? "true" : "false");
                        },
                        [&](const std::vector<std::string>& list) {
                          put_key(out, "arrayValue");
                          out.append("{\"values\":[");
                          for (std::size_t i = 0; i < list.size(); ++i) {
                            if (i) out.push_back(',');
                            out.append("{\"stringValue\":");
                            append_json_string(out, list[i]);
                            out.push_back('}');
                          }
                          out.append("]}");
                        }},
             v);
  out.push_back('}');
}

void put_attributes(std::string& out, const std::vector<span_attribute>& attributes) {
  put_key(out, "attributes");
  out.push_back('[');
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('{');
    put_key(out, "key");
    append_json_string(out, attributes[i].key);
    out.push_back(',');
    put_key(out, "value");
    put_any_value(out, attributes[i].value);
    out.push_back('}');
  }
  out.push_back(']');
}

void put_span(std::string& out, const span& s) {
  out.push_back('{');
  put_key(out, "traceId");
  append_json_string(out, trace_id_hex(s.context));
  out.push_back(',');
  put_key(out, "spanId");
  append_json_string(out, span_id_hex(s.context.span_id));
  if (s.parent_span_id != 0) {
    out.push_back(',');
    put_key(out, "parentSpanId");
    append_json_string(out, span_id_hex(s.parent_span_id));
  }
  out.push_back(',');
  put_key(out, "name");
  append_json_string(out, s.name);
  out.append(",\"kind\":");
  out.push_back(static_cast<char>('0' + static_cast<int>(s.kind)));
  out.push_back(',');
  put_key(out, "startTimeUnixNano");
  put_int_string(out, s.start_unix_ns);
  out.push_back(',');
  put_key(out, "endTimeUnixNano");
  put_int_string(out, s.end_unix_ns);
  out.push_back(',');
  put_attributes(out, s.attributes);
  out.append(",\"status\":{\"code\":");
  out.push_back(static_cast<char>('0' + static_cast<int>(s.status)));
  if (s.status == span_status::error && !s.status_message.empty()) {
    out.push_back(',');
    put_key(out, "message");
    append_json_string(out, s.status_message);
  }
  out.append("}}");
}

}  // namespace

std::string otlp_traces_json(const otlp_resource& resource, const std::vector<span>& spans) {
  std::string out;
  out.reserve(256 + spans.size() * 1024);
  out.append("{\"resourceSpans\":[{\"resource\":{");
  put_attributes(out, resource.attributes);
  out.append("},\"scopeSpans\":[{\"scope\":{");
  put_key(out, "name");
  append_json_string(out, resource.scope_name);
  if (!resource.scope_version.empty()) {
    out.push_back(',');
    put_key(out, "version");
    append_json_string(out, resource.scope_version);
  }
  out.append("},\"spans\":[");
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out.push_back(',');
    put_span(out, spans[i]);
  }
  out.append("]}]}]}");
  return out;
}

}  // namespace troupe
