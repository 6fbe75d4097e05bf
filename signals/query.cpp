#include "signals/query.hpp"

#include "signals/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const query_overrides& o) {
  boost::json::object out;
  if (o.model) out["model"] = *o.model;
  if (o.system_prompt) out["system_prompt"] = *o.system_prompt;
  if (o.max_iterations) out["max_iterations"] = *o.max_iterations;
  if (auto p = to_json(o.params); !p.as_object().empty()) out["params"] = std::move(p);
  return out;
}

decoded<query_overrides> decode_query_overrides(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  query_overrides o;
  o.model = r.optional_string("model");
  o.system_prompt = r.optional_string("system_prompt");
  if (auto n = r.optional_int64("max_iterations")) {
    if (*n <= 0) r.fail("max_iterations", "must be positive");
    o.max_iterations = static_cast<int>(*n);
  }
  if (const boost::json::value* p = r.optional_value("params")) {
    auto params = decode_generation_params(*p, r.field_path("params"));
    if (params) o.params = std::move(*params);
    else r.fail(params.error());
  }
  if (!r.ok()) return r.error();
  return o;
}

}  // namespace troupe
