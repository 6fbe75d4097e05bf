// The model and MCP servers the options name, resolved without a runtime:
// apart from the rest of the options (model_options.cpp), so that what
// reads a config (the serve config, its fuzz target) links no actors.

#include "apps/model_options.hpp"

#include "json/json_parse.hpp"
#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <boost/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace troupe::cli {

namespace json = boost::json;

namespace {

std::string env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "";
}

}  // namespace

// A script: [{"text": "...", "chunks": [...], "tool_calls": [{"id", "name", "arguments"}],
//             "error": {"type", "message"}, "usage": {...}, "delay_ms": 0}, ...]
std::vector<scripted_reply> load_script(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw usage_error("cannot read the script " + path);
  std::stringstream s;
  s << in.rdbuf();
  boost::system::error_code ec;
  json::value doc = parse_json(s.str(), ec);
  if (ec || !doc.is_array()) throw usage_error("the script " + path + " is not a JSON array of replies");
  std::vector<scripted_reply> replies;
  for (std::size_t i = 0; i < doc.as_array().size(); ++i) {
    const json::value& item = doc.as_array()[i];
    const std::string where = path + ": reply " + std::to_string(i);
    if (!item.is_object()) throw usage_error(where + " is not an object");
    const json::object& o = item.as_object();
    scripted_reply r;
    if (auto* t = o.if_contains("text"); t && t->is_string()) r.chunks.emplace_back(t->as_string());
    if (auto* c = o.if_contains("chunks"); c && c->is_array())
      for (const auto& part : c->as_array())
        if (part.is_string()) r.chunks.emplace_back(part.as_string());
    if (auto* calls = o.if_contains("tool_calls"); calls && calls->is_array())
      for (std::size_t k = 0; k < calls->as_array().size(); ++k) {
        auto call = decode_tool_call(calls->as_array()[k], "tool_calls[" + std::to_string(k) + "]");
        if (!call) throw usage_error(where + ": " + call.error().describe());
        r.tool_calls.push_back(std::move(*call));
      }
    if (auto* e = o.if_contains("error")) {
      auto err = decode_error_info(*e, "error");
      if (!err) throw usage_error(where + ": " + err.error().describe());
      r.error = *err;
    }
    if (auto* u = o.if_contains("usage")) {
      auto usage = decode_usage(*u, "usage");
      if (!usage) throw usage_error(where + ": " + usage.error().describe());
      r.usage = *usage;
    }
    if (auto* d = o.if_contains("delay_ms"); d && d->is_number())
      r.delay = std::chrono::milliseconds(d->to_number<std::int64_t>());
    replies.push_back(std::move(r));
  }
  return replies;
}

resolved_model resolve_model(const model_options& o) {
  std::string provider = o.provider;
  std::string model = o.model;
  if (const auto colon = model.find(':'); colon != std::string::npos) {
    const std::string prefix = model.substr(0, colon);
    if (prefix == "openai" || prefix == "anthropic" || prefix == "scripted") {
      if (provider.empty()) provider = prefix;
      model = model.substr(colon + 1);
    }
  }
  if (provider.empty()) provider = o.script.empty() ? "openai" : "scripted";

  if (provider == "scripted") {
    if (o.script.empty()) throw usage_error("--provider scripted needs --script FILE");
    return {std::make_shared<scripted_provider>(load_script(o.script)), model.empty() ? "scripted" : model};
  }
  if (model.empty())
    throw usage_error("--model is required, e.g. --model " + provider + ":" +
                      (provider == "openai" ? "gpt-4o-mini" : "claude-sonnet-4-5"));
  const bool openai = provider == "openai";
  const std::string default_url = openai ? "https://api.openai.com/v1" : "https://api.anthropic.com";
  std::string base_url = o.base_url.empty() ? env(openai ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL") : o.base_url;
  if (base_url.empty()) base_url = default_url;
  const std::string key_var = o.api_key_env.empty() ? (openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY") : o.api_key_env;
  const std::string key = env(key_var);
  // Local OpenAI-compatible servers usually need no key; the vendors' APIs do.
  if (key.empty() && (base_url == default_url || !o.api_key_env.empty()))
    throw usage_error("no API key: set " + key_var +
                      (o.api_key_env.empty() ? " (or name another variable with --api-key-env)" : ""));

  http_settings settings;
  settings.format = openai ? wire_format::openai : wire_format::anthropic;
  settings.stream = !o.no_stream;
  settings.retries = o.retries;
  settings.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_seconds * 1000));
  return {
      std::make_shared<http_llm_provider>(http_options_for(base_url, key, settings), std::make_shared<http_client>()),
      model};
}

std::vector<mcp_server_config> mcp_servers_for(const model_options& o) {
  std::vector<mcp_server_config> servers;
  for (const auto& spec : o.mcp) {
    mcp_server_config c;
    if (auto problem = parse_mcp_server(spec, c)) throw usage_error("--mcp: " + *problem);
    for (const auto& other : servers)
      if (other.name == c.name) throw usage_error("--mcp: two servers are named " + c.name);
    c.call_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.mcp_timeout_seconds * 1000));
    c.request_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.mcp_startup_timeout_seconds * 1000));
    servers.push_back(std::move(c));
  }
  for (const auto& spec : o.mcp_headers)
    if (auto problem = parse_mcp_header(spec, servers)) throw usage_error("--mcp-header: " + *problem);
  for (const auto& c : servers)
    if (auto problem = check_mcp_server(c)) throw usage_error("--mcp: " + *problem);
  return servers;
}

}  // namespace troupe::cli
