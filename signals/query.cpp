#include "signals/query.hpp"

#include "json/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const query_overrides& o) {
  boost::json::object out;
  if (o.model) out["model"] = *o.model;
  if (o.system_prompt) out["system_prompt"] = *o.system_prompt;
  if (o.max_iterations) out["max_iterations"] = *o.max_iterations;
  if (auto p = to_json(o.params); !p.as_object().empty()) out["params"] = std::move(p);
  if (!o.context.empty()) out["context"] = to_json(o.context);
  return out;
}

boost::json::value to_json(const context_overrides& o) {
  boost::json::object c;
  if (o.max_input_tokens) c["max_input_tokens"] = *o.max_input_tokens;
  if (o.reserve_output_tokens) c["reserve_output_tokens"] = *o.reserve_output_tokens;
  if (o.max_messages) c["max_messages"] = *o.max_messages;
  if (o.keep_last_turns) c["keep_last_turns"] = *o.keep_last_turns;
  if (o.summarize) c["summarize"] = *o.summarize;
  if (o.summarize_to) c["summarize_to"] = *o.summarize_to;
  return c;
}

decoded<context_overrides> decode_context_overrides(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  auto non_negative = [&](const char* key) {
    auto n = r.optional_int64(key);
    if (n && *n < 0) r.fail(key, "must not be negative");
    return n;
  };
  context_overrides o;
  o.max_input_tokens = non_negative("max_input_tokens");
  o.reserve_output_tokens = non_negative("reserve_output_tokens");
  o.max_messages = non_negative("max_messages");
  o.keep_last_turns = non_negative("keep_last_turns");
  o.summarize = r.optional_boolean("summarize");
  o.summarize_to = r.optional_number("summarize_to");
  // Written as a negated range test so that NaN is refused too.
  if (o.summarize_to && !(*o.summarize_to > 0 && *o.summarize_to <= 1))
    r.fail("summarize_to", "must be a fraction above 0 and at most 1");
  if (!r.ok()) return r.error();
  return o;
}

boost::json::value to_json(const observation_origin& o) {
  return boost::json::object{{"source", o.source}, {"round", o.round}};
}

decoded<observation_origin> decode_observation_origin(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  observation_origin o;
  o.source = r.string("source");
  o.round = r.optional_int64("round").value_or(0);
  if (o.round < 0) r.fail("round", "must not be negative");
  if (!r.ok()) return r.error();
  return o;
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
    if (params)
      o.params = std::move(*params);
    else
      r.fail(params.error());
  }
  if (const boost::json::value* ctx = r.optional_value("context")) {
    auto context = decode_context_overrides(*ctx, r.field_path("context"));
    if (context)
      o.context = *context;
    else
      r.fail(context.error());
  }
  if (!r.ok()) return r.error();
  return o;
}

}  // namespace troupe
