#include "runtime/mcp/detail/protocol.hpp"

namespace troupe::mcp {

namespace json = boost::json;

namespace {

json::object client_info() { return json::object{{"name", "troupe"}, {"version", "0.1"}}; }

}  // namespace

bool is_legacy_version(std::string_view v) {
  for (auto known : legacy_versions)
    if (v == known) return true;
  return false;
}

std::string spoken_versions() {
  std::string out(modern_version);
  for (std::size_t i = 0; i < legacy_versions.size(); ++i)
    out.append(i + 1 == legacy_versions.size() ? " and " : ", ").append(legacy_versions[i]);
  return out;
}

json::object with_modern_meta(json::object params) {
  json::object meta;
  if (auto* existing = params.if_contains("_meta"); existing && existing->is_object()) meta = existing->as_object();
  meta["io.modelcontextprotocol/protocolVersion"] = modern_version;
  meta["io.modelcontextprotocol/clientCapabilities"] = json::object{};
  meta["io.modelcontextprotocol/clientInfo"] = client_info();
  params["_meta"] = std::move(meta);
  return params;
}

json::object initialize_params() {
  // No client capabilities: troupe answers no sampling, roots or elicitation.
  return json::object{
      {"protocolVersion", legacy_versions.front()}, {"capabilities", json::object{}}, {"clientInfo", client_info()}};
}

bool is_modern_error(std::int64_t code) {
  return code == rpc_code::header_mismatch || code == rpc_code::missing_required_client_capability ||
         code == rpc_code::unsupported_protocol_version;
}

std::vector<std::string> supported_versions(const rpc_error& e) {
  std::vector<std::string> out;
  if (!e.data.is_object()) return out;
  const auto* list = e.data.as_object().if_contains("supported");
  if (!list || !list->is_array()) return out;
  for (const auto& v : list->as_array())
    if (v.is_string()) out.emplace_back(v.as_string());
  return out;
}

std::optional<error_info> check_result_type(const json::object& result, std::string_view server) {
  const auto* type = result.if_contains("resultType");
  if (!type || type->is_null()) return std::nullopt;
  if (!type->is_string())
    return error_info::of(error_type::malformed_response,
                          "the MCP server " + std::string(server) + " sent a resultType that is not a string");
  const std::string_view t = type->as_string();
  if (t == "complete") return std::nullopt;
  if (t == "input_required")
    return error_info::of(mcp_error::unsupported_result,
                          "the MCP server " + std::string(server) +
                              " asked for more input (resultType input_required), which troupe does not provide");
  return error_info::of(error_type::malformed_response, "the MCP server " + std::string(server) +
                                                            " sent an unknown resultType \"" + std::string(t) + "\"");
}

probe_verdict judge_probe(const rpc_reply& reply, std::string_view server) {
  if (const auto* result = std::get_if<json::object>(&reply)) {
    const auto* listed = result->if_contains("supportedVersions");
    if (!listed || !listed->is_array()) return speak_modern{};
    for (const auto& v : listed->as_array())
      if (v.is_string() && v.as_string() == modern_version) return speak_modern{};
    return speak_legacy{};
  }
  if (const auto* e = std::get_if<rpc_error>(&reply)) {
    if (e->code == rpc_code::unsupported_protocol_version) {
      std::string list;
      for (const auto& v : supported_versions(*e)) {
        if (is_legacy_version(v)) return speak_legacy{};
        list += (list.empty() ? "" : ", ") + v;
      }
      return error_info::of(mcp_error::unsupported_version,
                            "the MCP server " + std::string(server) +
                                " speaks none of troupe's protocol versions (it supports: " + list + ")");
    }
    if (is_modern_error(e->code)) return error_of(*e, server);
    return speak_legacy{};
  }
  const error_info& e = std::get<error_info>(reply);
  const bool final = e.type == mcp_error::server_exited || e.type == error_type::shutdown || e.type == "auth" ||
                     (e.type == mcp_error::unavailable && !e.http_status) || e.type == error_type::network;
  if (final) return e;
  return speak_legacy{};
}

error_info error_of(const rpc_error& e, std::string_view server) {
  return error_info::of(mcp_error::rpc_error, "the MCP server " + std::string(server) + " answered " + describe(e));
}

}  // namespace troupe::mcp
