#include "apps/serve/openai_chat.hpp"

#include "apps/serve/http.hpp"
#include "json/json_parse.hpp"

#include "json/json_reader.hpp"
#include "json/json_text.hpp"
#include "signals/error_info.hpp"

#include <map>

namespace troupe::serve {

namespace json = boost::json;

openai_error invalid_request(std::string param, std::string message) {
  return {400, "invalid_request_error", std::move(message), std::move(param), {}};
}

std::string to_json_text(const openai_error& e) {
  json::object o{{"message", e.message}, {"type", e.type}};
  o["param"] = e.param.empty() ? json::value(nullptr) : json::value(e.param);
  o["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  return json_text(json::object{{"error", std::move(o)}});
}

http_response openai_response(const openai_error& e) {
  http_response r{static_cast<http::status>(e.status), 11};
  r.set(http::field::content_type, "application/json");
  if (e.status == 429) r.set(http::field::retry_after, "1");
  r.body() = to_json_text(e);
  r.prepare_payload();
  return r;
}

namespace {

openai_error from_decode(const decode_error& e) {
  // The param is the top-level field, the message the whole path.
  const std::string param = e.field.substr(0, e.field.find_first_of(".["));
  return invalid_request(param, e.describe());
}

// A message's content: a string, or text parts [{"type":"text","text"}].
std::optional<std::string> read_content(json_reader& r, bool required) {
  const json::value* v = r.optional_value("content");
  if (!v) {
    if (required) r.fail("content", "expected a string or an array of text parts");
    return std::nullopt;
  }
  if (const json::string* s = v->if_string()) return std::string(*s);
  const json::array* parts = v->if_array();
  if (!parts) {
    r.fail("content", "expected a string or an array of text parts");
    return std::nullopt;
  }
  std::string text;
  for (std::size_t i = 0; i < parts->size(); ++i) {
    json_reader part((*parts)[i], element_path(r.field_path("content"), i));
    const std::string type = part.string("type");
    if (part.ok() && type != "text") part.fail("type", "only \"text\" parts are supported, not \"" + type + "\"");
    const std::string piece = part.string("text");
    if (!part.ok()) {
      r.fail(part.error());
      return std::nullopt;
    }
    text += piece;
  }
  return text;
}

std::vector<chat_tool_call> read_tool_calls(json_reader& r) {
  std::vector<chat_tool_call> calls;
  const auto list = r.optional_array("tool_calls");
  if (!list) return calls;
  for (std::size_t i = 0; i < list->size(); ++i) {
    json_reader c((*list)[i], element_path(r.field_path("tool_calls"), i));
    chat_tool_call call;
    call.id = c.string("id");
    if (const auto type = c.optional_string("type"); type && *type != "function")
      c.fail("type", "expected \"function\"");
    const json::object function = c.object("function");
    json_reader f(function, c.field_path("function"));
    if (c.ok()) {
      call.name = f.string("name");
      call.arguments = f.string("arguments");
      if (!f.ok()) c.fail(f.error());
    }
    if (!c.ok()) {
      r.fail(c.error());
      return {};
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

constexpr std::array<std::string_view, 5> roles{"system", "developer", "user", "assistant", "tool"};

chat_message read_message(const json::value& v, std::string path, json_reader& parent) {
  json_reader r(v, std::move(path));
  chat_message m;
  m.role = r.string("role");
  if (r.ok() && std::find(roles.begin(), roles.end(), m.role) == roles.end())
    r.fail("role", "expected one of system, developer, user, assistant, tool; got \"" + m.role + "\"");
  if (r.ok()) {
    if (m.role == "assistant") {
      m.tool_calls = read_tool_calls(r);
      // An assistant message may carry only tool calls.
      m.content = read_content(r, m.tool_calls.empty()).value_or("");
    } else {
      m.content = read_content(r, true).value_or("");
      if (m.role == "tool") m.tool_call_id = r.string("tool_call_id");
    }
  }
  if (!r.ok()) parent.fail(r.error());
  return m;
}

std::optional<double> read_bounded(json_reader& r, std::string_view key, double lo, double hi) {
  const auto x = r.optional_number(key);
  if (x && (*x < lo || *x > hi))
    r.fail(key, "expected a number from " + json_text(json::value(lo)) + " to " + json_text(json::value(hi)));
  return x;
}

// Fields whose effect troupe cannot give are refused rather than ignored;
// their neutral values, which clients send by default, pass.
void refuse_unhonoured(json_reader& r) {
  auto given = [&](std::string_view key) {
    const json::value* v = r.optional_value(key);
    return v && !v->is_null() ? v : nullptr;
  };
  if (const json::value* f = given("response_format")) {
    const json::object* o = f->if_object();
    const json::value* type = o ? o->if_contains("type") : nullptr;
    if (!type || *type != "text")
      r.fail("response_format", "only {\"type\": \"text\"} is supported: the agent's answer is its own text");
  }
  if (const json::value* v = given("logprobs"); v && *v != false)
    r.fail("logprobs", "log probabilities are not available");
  if (given("top_logprobs")) r.fail("top_logprobs", "log probabilities are not available");
  if (given("seed")) r.fail("seed", "a seed is not supported: the agent's model calls are not reproducible by seed");
  if (const json::value* v = given("tool_choice"); v && *v != "auto")
    r.fail("tool_choice", "the agent chooses its own tools; only \"auto\" is supported");
  for (const char* key : {"presence_penalty", "frequency_penalty"})
    if (const json::value* v = given(key); v && !(v->is_number() && v->to_number<double>() == 0))
      r.fail(key, "penalties are not supported; only 0 is accepted");
  if (const json::value* v = given("logit_bias"); v && !(v->is_object() && v->as_object().empty()))
    r.fail("logit_bias", "logit_bias is not supported");
}

}  // namespace

std::variant<chat_request, openai_error> parse_chat_request(std::string_view body) {
  boost::system::error_code ec;
  const json::value doc = parse_json(body, ec);
  if (ec) return invalid_request("", "the body is not valid JSON: " + ec.message());
  json_reader r(doc, "");
  if (!r.source()) return invalid_request("", "the body must be a JSON object");

  chat_request out;
  out.model = r.string("model");
  const json::array messages = r.array("messages");
  if (r.ok() && messages.empty()) r.fail("messages", "expected at least one message");
  for (std::size_t i = 0; r.ok() && i < messages.size(); ++i)
    out.messages.push_back(read_message(messages[i], element_path("messages", i), r));

  out.stream = r.optional_boolean("stream").value_or(false);
  if (const auto options = r.optional_object("stream_options")) {
    json_reader o(*options, "stream_options");
    out.include_usage = o.optional_boolean("include_usage").value_or(false);
    if (!o.ok()) r.fail(o.error());
  }
  out.user = r.optional_string("user").value_or("");

  // max_completion_tokens is the newer name of max_tokens.
  auto max_tokens = r.optional_int64("max_completion_tokens");
  if (!max_tokens) max_tokens = r.optional_int64("max_tokens");
  const char* max_key = r.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (max_tokens && (*max_tokens < 1 || *max_tokens > 1'000'000))
    r.fail(max_key, "expected an integer from 1 to 1000000");
  else if (max_tokens)
    out.params.max_tokens = static_cast<int>(*max_tokens);
  out.params.temperature = read_bounded(r, "temperature", 0, 2);
  out.params.top_p = read_bounded(r, "top_p", 0, 1);
  if (const json::value* stop = r.optional_value("stop")) {
    if (const json::string* s = stop->if_string()) {
      out.params.stop.emplace_back(*s);
    } else if (const json::array* list = stop->if_array(); list && list->size() <= 4) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        if (const json::string* s = (*list)[i].if_string())
          out.params.stop.emplace_back(*s);
        else
          r.fail(element_path("stop", i), "expected a string");
      }
    } else {
      r.fail("stop", "expected a string or an array of at most 4 strings");
    }
  }

  if (const auto n = r.optional_int64("n"); n && *n != 1)
    r.fail("n", "only one choice per request is supported (n = 1)");
  if (const auto tools = r.optional_array("tools"); tools && !tools->empty())
    r.fail("tools", "the agent runs its own tools; caller-defined tools are not supported");
  refuse_unhonoured(r);

  if (!r.ok()) return from_decode(r.error());
  return out;
}

std::variant<chat_turn, openai_error> to_turn(const chat_request& req) {
  const std::vector<chat_message>& ms = req.messages;
  if (ms.empty()) return invalid_request("messages", "messages: expected at least one message");
  if (ms.back().role != "user")
    return invalid_request("messages",
                           element_path("messages", ms.size() - 1) + ".role: the last message must be the user's");

  chat_turn turn;
  std::string system;
  // The tool calls of the latest assistant message still waiting for a
  // result, by id: their names go on the results.
  std::map<std::string, std::string, std::less<>> open_calls;
  std::string open_since;  // the assistant message that made them
  for (std::size_t i = 0; i + 1 < ms.size(); ++i) {
    const chat_message& m = ms[i];
    const std::string path = element_path("messages", i);
    if (m.role != "tool" && !open_calls.empty())
      return invalid_request("messages", open_since + ".tool_calls: the call \"" + open_calls.begin()->first +
                                             "\" has no tool message with its result before " + path);
    if (m.role == "system" || m.role == "developer") {
      if (!system.empty()) system += "\n\n";
      system += m.content;
    } else if (m.role == "user") {
      turn.history.push_back({std::string(entry_kind::message), {{"role", "user"}, {"content", m.content}}, {}});
    } else if (m.role == "assistant") {
      // A call id of its own ties the message to its tool calls, as the
      // projection groups them back into one assistant message.
      const std::string call_id = "openai-" + std::to_string(i);
      turn.history.push_back(
          {std::string(entry_kind::message), {{"role", "assistant"}, {"content", m.content}}, {{"call_id", call_id}}});
      for (std::size_t j = 0; j < m.tool_calls.size(); ++j) {
        const chat_tool_call& c = m.tool_calls[j];
        const std::string arguments_path = element_path(path + ".tool_calls", j) + ".function.arguments";
        boost::system::error_code ec;
        json::value args = parse_json(c.arguments.empty() ? std::string_view("{}") : c.arguments, ec);
        if (ec || !args.is_object())
          return invalid_request("messages", arguments_path + ": expected the text of a JSON object");
        // One result per id: a second call with it would be left unanswered.
        if (!open_calls.emplace(c.id, c.name).second)
          return invalid_request("messages", element_path(path + ".tool_calls", j) + ".id: \"" + c.id +
                                                 "\" is the id of an earlier call of this message");
        turn.history.push_back({std::string(entry_kind::tool_call),
                                {{"name", c.name}, {"arguments", std::move(args.as_object())}},
                                {{"call_id", call_id}, {"tool_call_id", c.id}}});
      }
      open_since = path;
    } else {  // tool
      const auto call = open_calls.find(m.tool_call_id);
      if (call == open_calls.end())
        return invalid_request("messages", path + ".tool_call_id: \"" + m.tool_call_id +
                                               "\" answers no tool call of the assistant message before it");
      turn.history.push_back({std::string(entry_kind::tool_result),
                              {{"name", call->second}, {"result", m.content}},
                              {{"tool_call_id", m.tool_call_id}}});
      open_calls.erase(call);
    }
  }
  if (!open_calls.empty())
    return invalid_request("messages", open_since + ".tool_calls: the call \"" + open_calls.begin()->first +
                                           "\" has no tool message with its result");
  if (!system.empty()) turn.system_prompt = std::move(system);
  turn.question = ms.back().content;
  return turn;
}

namespace {

json::object header_object(const completion_header& h, std::string_view object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

json::object usage_object(const token_usage& u) {
  return {
      {"prompt_tokens", u.input_tokens}, {"completion_tokens", u.output_tokens}, {"total_tokens", u.total_tokens()}};
}

std::string chunk_json(const completion_header& h, json::object delta, json::value finish_reason,
                       bool with_usage_field) {
  json::object o = header_object(h, "chat.completion.chunk");
  o["choices"] = json::array{json::object{
      {"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", std::move(finish_reason)}}};
  if (with_usage_field) o["usage"] = nullptr;
  return json_text(o);
}

}  // namespace

std::string completion_json(const completion_header& h, std::string_view answer, const token_usage& usage) {
  json::object o = header_object(h, "chat.completion");
  o["choices"] = json::array{json::object{{"index", 0},
                                          {"message", json::object{{"role", "assistant"}, {"content", answer}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", "stop"}}};
  o["usage"] = usage_object(usage);
  return json_text(o);
}

std::string role_chunk_json(const completion_header& h, bool with_usage_field) {
  return chunk_json(h, {{"role", "assistant"}, {"content", ""}}, nullptr, with_usage_field);
}

std::string content_chunk_json(const completion_header& h, std::string_view text, bool with_usage_field) {
  return chunk_json(h, {{"content", text}}, nullptr, with_usage_field);
}

std::string finish_chunk_json(const completion_header& h, bool with_usage_field) {
  return chunk_json(h, {}, "stop", with_usage_field);
}

std::string usage_chunk_json(const completion_header& h, const token_usage& usage) {
  json::object o = header_object(h, "chat.completion.chunk");
  o["choices"] = json::array{};
  o["usage"] = usage_object(usage);
  return json_text(o);
}

namespace {

void append_escaped(std::string& out, std::string_view part) {
  for (char c : part) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
}

}  // namespace

std::string conversation_identifier(std::string_view user, std::string_view chat) {
  std::string out;
  out.reserve(user.size() + chat.size() + 1);
  append_escaped(out, user);
  out += '/';
  append_escaped(out, chat);
  return out;
}

std::string_view openai_error_type(int status) {
  if (status == 409) return "conflict_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 400 && status < 500) return "invalid_request_error";
  if (status == 502) return "upstream_error";
  if (status == 503) return "service_unavailable_error";
  if (status == 504) return "timeout_error";
  return "server_error";
}

openai_error turn_error(std::string_view type, std::string_view message) {
  // The status is the one the conversations API answers with; the type is
  // OpenAI's name for that kind of failure.
  const int status = static_cast<int>(status_of_error(type));
  return {status, std::string(openai_error_type(status)), std::string(message), {}, std::string(type)};
}

json::object paused_error_json(const std::optional<std::string>& conversation_id, json::array pending) {
  const std::string message = conversation_id
                                  ? std::to_string(pending.size()) +
                                        " tool call(s) wait for a person's decision: POST /v1/conversations/" +
                                        *conversation_id + "/decisions continues the turn"
                                  : std::to_string(pending.size()) +
                                        " tool call(s) wait for a person's decision, which needs a conversation "
                                        "(X-Troupe-Conversation); this request had none, so its pause was dropped";
  return {{"error",
           {{"message", message},
            {"type", openai_error_type(409)},
            {"param", nullptr},
            {"code", error_type::awaiting_input},
            {"conversation_id", conversation_id ? json::value(*conversation_id) : json::value(nullptr)},
            {"pending", std::move(pending)}}}};
}

http_response paused_response(const std::optional<std::string>& conversation_id, json::array pending) {
  http_response r{http::status::conflict, 11};
  r.set(http::field::content_type, "application/json");
  r.body() = json_text(paused_error_json(conversation_id, std::move(pending)));
  r.prepare_payload();
  return r;
}

}  // namespace troupe::serve
