#include "runtime/telemetry/otlp_json.hpp"

#include "signals/json_text.hpp"
#include "signals/overloaded.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace troupe {

namespace json = boost::json;

namespace {

json::object any_value(const attribute_value& v) {
  return std::visit(overloaded{[](const std::string& s) {
                                 return json::object{{"stringValue", s}};
                               },
                               [](std::int64_t i) {
                                 return json::object{{"intValue", std::to_string(i)}};
                               },
                               [](double d) {
                                 return json::object{{"doubleValue", d}};
                               },
                               [](bool b) {
                                 return json::object{{"boolValue", b}};
                               },
                               [](const std::vector<std::string>& list) {
                                 json::array values;
                                 for (const auto& s : list) values.push_back(json::object{{"stringValue", s}});
                                 return json::object{{"arrayValue", json::object{{"values", std::move(values)}}}};
                               }},
                    v);
}

json::array attributes_json(const std::vector<span_attribute>& attributes) {
  json::array out;
  out.reserve(attributes.size());
  for (const auto& a : attributes) out.push_back(json::object{{"key", a.key}, {"value", any_value(a.value)}});
  return out;
}

json::object span_json(const span& s) {
  json::object o{{"traceId", trace_id_hex(s.context)},
                 {"spanId", span_id_hex(s.context.span_id)},
                 {"name", s.name},
                 {"kind", static_cast<int>(s.kind)},
                 {"startTimeUnixNano", std::to_string(s.start_unix_ns)},
                 {"endTimeUnixNano", std::to_string(s.end_unix_ns)},
                 {"attributes", attributes_json(s.attributes)}};
  if (s.parent_span_id != 0) o["parentSpanId"] = span_id_hex(s.parent_span_id);
  json::object status{{"code", static_cast<int>(s.status)}};
  if (s.status == span_status::error && !s.status_message.empty()) status["message"] = s.status_message;
  o["status"] = std::move(status);
  return o;
}

}  // namespace

std::string otlp_traces_json(const otlp_resource& resource, const std::vector<span>& spans) {
  json::array span_list;
  span_list.reserve(spans.size());
  for (const auto& s : spans) span_list.push_back(span_json(s));
  json::object scope{{"name", resource.scope_name}};
  if (!resource.scope_version.empty()) scope["version"] = resource.scope_version;
  json::object scope_spans{{"scope", std::move(scope)}, {"spans", std::move(span_list)}};
  json::object resource_spans{{"resource", json::object{{"attributes", attributes_json(resource.attributes)}}},
                              {"scopeSpans", json::array{std::move(scope_spans)}}};
  return json_text(json::object{{"resourceSpans", json::array{std::move(resource_spans)}}});
}

}  // namespace troupe
