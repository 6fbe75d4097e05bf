#include "signals/tool_result.hpp"

#include "base/overloaded.hpp"
#include "json/json_reader.hpp"

namespace troupe {

void put_tool_outcome(boost::json::object& o, const tool_outcome& outcome) {
  std::visit(overloaded{[&](const boost::json::value& v) { o["result"] = v; },
                        [&](const error_info& e) { o["error"] = to_json(e); }},
             outcome);
}

decoded<tool_outcome> decode_tool_outcome(const boost::json::object& o, std::string path) {
  json_reader r(o, std::move(path));
  if (const boost::json::value* e = r.optional_value("error")) {
    auto err = decode_error_info(*e, r.field_path("error"));
    if (!err) return err.error();
    return tool_outcome{std::move(*err)};
  }
  // A tool may return null, so "result" only has to be present.
  if (!r.has("result")) return decode_error{r.field_path("result"), "is required (or an error)"};
  return tool_outcome{r.value("result")};
}

}  // namespace troupe
