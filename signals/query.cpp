#include "signals/query.hpp"

#include "signals/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const query_overrides& o) {
  boost::json::object out;
  if (o.model) out["model"] = *o.model;
  if (o.system_prompt) out["system_prompt"] = *o.system_prompt;
  if (o.max_iterations) out["max_iterations"] = *o.max_iterations;
  if (auto p = to_json(o.params); !p.as_object().empty()) out["params"] = std::move(p);
  if (!o.context.empty()) {
    boost::json::object c;
    if (o.context.max_input_tokens) c["max_input_tokens"] = *o.context.max_input_tokens;
    if (o.context.reserve_output_tokens) c["reserve_output_tokens"] = *o.context.reserve_output_tokens;
    if (o.context.max_messages) c["max_messages"] = *o.context.max_messages;
    if (o.context.keep_last_turns) c["keep_last_turns"] = *o.context.keep_last_turns;
    if (o.context.summarize) c["summarize"] = *o.context.summarize;
    out["context"] = std::move(c);
  }
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
  if (const boost::json::value* ctx = r.optional_value("context")) {
    json_reader c(*ctx, r.field_path("context"));
    auto non_negative = [&](const char* key) {
      auto v = c.optional_int64(key);
      if (v && *v < 0) c.fail(key, "must not be negative");
      return v;
    };
    o.context.max_input_tokens = non_negative("max_input_tokens");
    o.context.reserve_output_tokens = non_negative("reserve_output_tokens");
    o.context.max_messages = non_negative("max_messages");
    o.context.keep_last_turns = non_negative("keep_last_turns");
    o.context.summarize = c.optional_boolean("summarize");
    if (!c.ok()) r.fail(c.error());
  }
  if (!r.ok()) return r.error();
  return o;
}

}  // namespace troupe
