#include "runtime/mcp/detail/json_rpc.hpp"

#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "runtime/detail/text.hpp"

namespace troupe::mcp {

namespace json = boost::json;

namespace {

std::optional<rpc_id> id_of(const json::value& v) {
  if (v.is_string()) return rpc_id(std::string(v.as_string()));
  if (v.is_int64()) return rpc_id(v.as_int64());
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return rpc_id(static_cast<std::int64_t>(v.as_uint64()));
  return std::nullopt;
}

json::value id_value(const rpc_id& id) {
  return std::visit([](const auto& x) { return json::value(x); }, id);
}

std::string excerpt(std::string_view text) { return shortened(text, 120); }

rpc_message malformed(std::string why, std::optional<rpc_id> id = std::nullopt) {
  return malformed_message{std::move(why), std::move(id)};
}

}  // namespace

std::optional<std::vector<std::string>> split_rpc_batch(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '[') return std::nullopt;
  boost::system::error_code ec;
  const json::value doc = parse_json(text, ec);
  if (ec || !doc.is_array()) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(doc.as_array().size());
  for (const json::value& m : doc.as_array()) out.push_back(json_text(m));
  return out;
}

rpc_message parse_rpc_message(std::string_view text) {
  boost::system::error_code ec;
  json::value doc = parse_json(text, ec);
  if (ec) return malformed("not JSON: " + excerpt(text));
  if (!doc.is_object()) return malformed("not a JSON-RPC object: " + excerpt(text));
  const json::object& o = doc.as_object();
  const auto* version = o.if_contains("jsonrpc");
  if (!version || !version->is_string() || version->as_string() != "2.0")
    return malformed("\"jsonrpc\" is not \"2.0\": " + excerpt(text));

  const json::value* id_field = o.if_contains("id");
  std::optional<rpc_id> id = id_field ? id_of(*id_field) : std::nullopt;
  if (id_field && !id && !id_field->is_null()) return malformed("\"id\" is neither a string nor an integer");

  if (const auto* method = o.if_contains("method")) {
    if (!method->is_string()) return malformed("\"method\" is not a string", id);
    json::object params;
    if (const auto* p = o.if_contains("params"); p && !p->is_null()) {
      if (!p->is_object()) return malformed("\"params\" is not an object", id);
      params = p->as_object();
    }
    if (id) return rpc_request{*id, std::string(method->as_string()), std::move(params)};
    if (id_field) return malformed("a request with a null id");
    return rpc_notification{std::string(method->as_string()), std::move(params)};
  }

  const json::value* result = o.if_contains("result");
  const json::value* error = o.if_contains("error");
  if (result && error) return malformed("a response with both \"result\" and \"error\"", id);
  if (error) {
    if (!error->is_object()) return malformed("\"error\" is not an object", id);
    const json::object& e = error->as_object();
    const auto* code = e.if_contains("code");
    const auto* message = e.if_contains("message");
    if (!code || !(code->is_int64() || code->is_uint64())) return malformed("\"error.code\" is not an integer", id);
    rpc_error err;
    err.code = code->is_int64() ? code->as_int64() : static_cast<std::int64_t>(code->as_uint64());
    if (message && message->is_string()) err.message = message->as_string();
    if (const auto* data = e.if_contains("data")) err.data = *data;
    // An error about a request the server could not read has no id; it
    // answers nothing we can match, so it stays malformed for our purposes.
    if (!id) return malformed("an error without an id: " + describe(err));
    return rpc_response{*id, std::move(err)};
  }
  if (result) {
    if (!id) return malformed("a result without an id");
    if (!result->is_object()) return malformed("\"result\" is not an object", id);
    return rpc_response{*id, result->as_object()};
  }
  return malformed("neither a request, a notification nor a response: " + excerpt(text), id);
}

std::string encode_request(std::int64_t id, std::string_view method, json::object params) {
  json::object o{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.empty()) o["params"] = std::move(params);
  return json_text(o);
}

std::string encode_notification(std::string_view method, json::object params) {
  json::object o{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.empty()) o["params"] = std::move(params);
  return json_text(o);
}

std::string encode_result(const rpc_id& id, json::object result) {
  return json_text(json::object{{"jsonrpc", "2.0"}, {"id", id_value(id)}, {"result", std::move(result)}});
}

std::string encode_error(const rpc_id& id, std::int64_t code, std::string_view message) {
  return json_text(json::object{
      {"jsonrpc", "2.0"}, {"id", id_value(id)}, {"error", json::object{{"code", code}, {"message", message}}}});
}

std::string describe(const rpc_error& e) {
  return "error " + std::to_string(e.code) + (e.message.empty() ? "" : ": " + e.message);
}

}  // namespace troupe::mcp
