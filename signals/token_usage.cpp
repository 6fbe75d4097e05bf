#include "signals/token_usage.hpp"

#include "json/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const token_usage& u) {
  boost::json::object o{{"input_tokens", u.input_tokens}, {"output_tokens", u.output_tokens}};
  if (u.calls_without_usage) o["calls_without_usage"] = u.calls_without_usage;
  return o;
}

decoded<token_usage> decode_usage(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  token_usage u{r.int64("input_tokens"), r.int64("output_tokens"), r.optional_int64("calls_without_usage").value_or(0)};
  if (!r.ok()) return r.error();
  if (u.calls_without_usage < 0) return decode_error{r.field_path("calls_without_usage"), "must not be negative"};
  if (u.input_tokens < 0) return decode_error{r.field_path("input_tokens"), "must not be negative"};
  if (u.output_tokens < 0) return decode_error{r.field_path("output_tokens"), "must not be negative"};
  return u;
}

}  // namespace troupe
