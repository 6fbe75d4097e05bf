#include "signals/token_usage.hpp"

#include "signals/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const token_usage& u) {
  return boost::json::object{{"input_tokens", u.input_tokens},
                             {"output_tokens", u.output_tokens}};
}

decoded<token_usage> decode_usage(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  token_usage u{r.int64("input_tokens"), r.int64("output_tokens")};
  if (!r.ok()) return r.error();
  if (u.input_tokens < 0) return decode_error{r.field_path("input_tokens"), "must not be negative"};
  if (u.output_tokens < 0) return decode_error{r.field_path("output_tokens"), "must not be negative"};
  return u;
}

}  // namespace troupe
