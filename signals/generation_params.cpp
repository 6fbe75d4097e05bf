#include "signals/generation_params.hpp"

#include "json/json_reader.hpp"

namespace troupe {

generation_params generation_params::overlay(const generation_params& base, const generation_params& over) {
  generation_params p = base;
  if (over.max_tokens) p.max_tokens = over.max_tokens;
  if (over.temperature) p.temperature = over.temperature;
  if (over.top_p) p.top_p = over.top_p;
  if (!over.stop.empty()) p.stop = over.stop;
  return p;
}

boost::json::value to_json(const generation_params& p) {
  boost::json::object o;
  if (p.max_tokens) o["max_tokens"] = *p.max_tokens;
  if (p.temperature) o["temperature"] = *p.temperature;
  if (p.top_p) o["top_p"] = *p.top_p;
  if (!p.stop.empty()) {
    boost::json::array a;
    for (const auto& s : p.stop) a.emplace_back(s);
    o["stop"] = std::move(a);
  }
  return o;
}

decoded<generation_params> decode_generation_params(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  generation_params p;
  if (auto n = r.optional_int64("max_tokens")) {
    if (*n <= 0) r.fail("max_tokens", "must be positive");
    p.max_tokens = static_cast<int>(*n);
  }
  p.temperature = r.optional_number("temperature");
  p.top_p = r.optional_number("top_p");
  if (auto stops = r.optional_array("stop")) {
    for (std::size_t i = 0; i < stops->size(); ++i) {
      const auto* s = (*stops)[i].if_string();
      if (!s) {
        r.fail(decode_error{element_path(r.field_path("stop"), i), "expected a string"});
        break;
      }
      p.stop.emplace_back(*s);
    }
  }
  if (!r.ok()) return r.error();
  return p;
}

}  // namespace troupe
