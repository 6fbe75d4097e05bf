#include "signals/tool_call.hpp"

#include "json/json_reader.hpp"

namespace troupe {

boost::json::value to_json(const tool_call& c) {
  boost::json::object o{{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
  if (c.invalid_arguments) o["invalid_arguments"] = *c.invalid_arguments;
  return o;
}

decoded<tool_call> decode_tool_call(const boost::json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  tool_call c;
  c.id = r.string("id");
  c.name = r.string("name");
  c.arguments = r.optional_object("arguments").value_or(boost::json::object{});
  c.invalid_arguments = r.optional_string("invalid_arguments");
  if (!r.ok()) return r.error();
  if (c.name.empty()) return decode_error{r.field_path("name"), "must not be empty"};
  return c;
}

}  // namespace troupe
