#include "signals/error_info.hpp"

#include "json/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const error_info& e) {
  boost::json::object o{{"type", e.type}, {"message", e.message}};
  if (e.http_status) o["http_status"] = *e.http_status;
  if (e.attempts) o["attempts"] = e.attempts;
  if (e.retry_after_seconds) o["retry_after_seconds"] = *e.retry_after_seconds;
  return o;
}

decoded<error_info> decode_error_info(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  error_info e;
  e.type = r.string("type");
  e.message = r.optional_string("message").value_or("");
  if (auto s = r.optional_int64("http_status")) e.http_status = static_cast<int>(*s);
  e.attempts = static_cast<int>(r.optional_int64("attempts").value_or(0));
  e.retry_after_seconds = r.optional_number("retry_after_seconds");
  if (!r.ok()) return r.error();
  if (e.type.empty()) return decode_error{r.field_path("type"), "must not be empty"};
  return e;
}

}  // namespace troupe
