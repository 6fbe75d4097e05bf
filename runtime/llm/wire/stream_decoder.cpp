#include "runtime/llm/wire/detail/stream_decoder.hpp"

#include "json/json_parse.hpp"
#include "runtime/detail/text.hpp"

namespace troupe {

tool_call assemble_tool_call(std::string id, std::string name, const std::string& arguments) {
  tool_call c{std::move(id), std::move(name), {}, std::nullopt};
  if (arguments.find_first_not_of(" \t\r\n") == std::string::npos) return c;
  boost::system::error_code ec;
  boost::json::value v = parse_json(arguments, ec);
  if (ec)
    c.invalid_arguments = arguments + " (" + ec.message() + ")";
  else if (auto* o = v.if_object())
    c.arguments = std::move(*o);
  else
    c.invalid_arguments = arguments + " (not a JSON object)";
  return c;
}

void stream_decoder::text(std::string_view t) {
  if (t.empty()) return;
  text_ += t;
  if (on_delta_) on_delta_(llm_delta{call_id_, std::string(t), ""});
}

void stream_decoder::thinking(std::string_view t) {
  if (t.empty()) return;
  thinking_ += t;
  if (on_delta_) on_delta_(llm_delta{call_id_, "", std::string(t)});
}

void stream_decoder::fail(error_info e) {
  if (done_) return;
  error_ = std::move(e);
  done_ = true;
}

void stream_decoder::complete(std::string finish_reason) {
  if (done_) return;
  if (!finish_reason.empty()) finish_reason_ = std::move(finish_reason);
  done_ = true;
}

void stream_decoder::malformed(std::string what) {
  fail(error_info::of(error_type::malformed_response, std::move(what), 1));
}

std::string response_label(const json_reader& o, std::string_view key) {
  const boost::json::value* v = o.optional_value(key);
  return v && v->is_string() ? shortened(v->get_string(), 256) : std::string();
}

void stream_decoder::name_response(const json_reader& o, std::string_view id_key, std::string_view model_key) {
  if (response_id_.empty()) response_id_ = response_label(o, id_key);
  if (response_model_.empty()) response_model_ = response_label(o, model_key);
}

llm_result stream_decoder::finish() {
  if (error_) return {call_id_, *error_};
  if (!done_)
    return {call_id_, error_info::of(error_type::malformed_response, "the stream ended before its terminator", 1)};
  llm_completion c;
  c.text = text_;
  c.thinking = thinking_;
  c.usage = usage_;
  c.finish_reason = finish_reason_;
  c.response_id = response_id_;
  c.response_model = response_model_;
  for (const auto& p : tool_calls_) c.tool_calls.push_back(assemble_tool_call(p.id, p.name, p.arguments));
  return {call_id_, std::move(c)};
}

}  // namespace troupe
