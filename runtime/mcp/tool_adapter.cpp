#include "runtime/mcp/detail/tool_adapter.hpp"

#include "base/overloaded.hpp"
#include "json/json_text.hpp"

#include <cstdio>
#include <functional>

namespace troupe::mcp {

namespace json = boost::json;

std::string troupe_tool_name(std::string_view server, std::string_view tool) {
  constexpr std::size_t limit = 64;
  std::string name = std::string(server) + "__" + std::string(tool);
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (name.size() <= limit && name == std::string(server) + "__" + std::string(tool)) return name;
  // Cut or changed: a hash of the original keeps distinct tools apart.
  char hash[10];
  std::snprintf(hash, sizeof hash, "_%08x", static_cast<unsigned>(std::hash<std::string_view>{}(tool)&0xffffffffu));
  if (name.size() > limit - 9) name.resize(limit - 9);
  return name + hash;
}

std::variant<listed_tool, error_info> decode_listed_tool(const json::value& v, std::string_view server, bool http) {
  const auto invalid = [&](std::string what) {
    return error_info::of(mcp_error::invalid_tool, "the MCP server " + std::string(server) + " listed " + what);
  };
  if (!v.is_object()) return invalid("a tool that is not an object");
  const json::object& o = v.as_object();
  const auto* name = o.if_contains("name");
  if (!name || !name->is_string() || name->as_string().empty()) return invalid("a tool without a name");
  const std::string mcp_name(name->as_string());
  const auto* schema = o.if_contains("inputSchema");
  if (!schema || !schema->is_object())
    return invalid("the tool \"" + mcp_name + "\" with an inputSchema that is not a JSON object");
  listed_tool t;
  t.mcp_name = mcp_name;
  t.spec.name = troupe_tool_name(server, mcp_name);
  if (const auto* d = o.if_contains("description"); d && d->is_string()) t.spec.description = d->as_string();
  if (t.spec.description.empty())
    if (const auto* title = o.if_contains("title"); title && title->is_string())
      t.spec.description = title->as_string();
  t.spec.parameters = schema->as_object();
  if (http) {
    auto headers = find_param_headers(t.spec.parameters);
    if (auto* problem = std::get_if<std::string>(&headers))
      return invalid("the tool \"" + mcp_name + "\" with " + *problem);
    t.param_headers = std::move(std::get<std::vector<param_header>>(headers));
  }
  return t;
}

namespace {

// The content blocks as text: text blocks verbatim, anything else named.
std::string content_text(const json::object& result) {
  std::string out;
  const auto* content = result.if_contains("content");
  if (!content || !content->is_array()) return out;
  for (const auto& item : content->as_array()) {
    if (!item.is_object()) continue;
    const json::object& block = item.as_object();
    const auto* type = block.if_contains("type");
    const std::string_view kind = type && type->is_string() ? std::string_view(type->as_string()) : "";
    std::string piece;
    if (kind == "text") {
      if (const auto* t = block.if_contains("text"); t && t->is_string()) piece = t->as_string();
    } else if (kind == "resource") {
      const auto* r = block.if_contains("resource");
      const auto* t = r && r->is_object() ? r->as_object().if_contains("text") : nullptr;
      piece = t && t->is_string() ? std::string(t->as_string()) : "[a resource]";
    } else {
      // Images and audio are base64 the model cannot read as a tool result.
      const auto* mime = block.if_contains("mimeType");
      const auto* uri = block.if_contains("uri");
      piece = "[" + std::string(kind.empty() ? "content" : kind);
      if (mime && mime->is_string()) piece += " " + std::string(mime->as_string());
      if (uri && uri->is_string()) piece += " " + std::string(uri->as_string());
      piece += "]";
    }
    if (!out.empty()) out += "\n";
    out += piece;
  }
  return out;
}

}  // namespace

tool_outcome outcome_of_call(rpc_reply reply, std::string_view server) {
  return std::visit(overloaded{[&](json::object& result) -> tool_outcome {
                                 const auto* is_error = result.if_contains("isError");
                                 if (is_error && is_error->is_bool() && is_error->as_bool()) {
                                   std::string text = content_text(result);
                                   if (text.empty()) text = "the tool reported an error and said nothing more";
                                   return error_info::of(mcp_error::tool_error, std::move(text));
                                 }
                                 if (const auto* s = result.if_contains("structuredContent"); s && s->is_object())
                                   return json::value(*s);
                                 return json::value(content_text(result));
                               },
                               [&](rpc_error& e) -> tool_outcome { return error_of(e, server); },
                               [&](error_info& e) -> tool_outcome { return std::move(e); }},
                    reply);
}

}  // namespace troupe::mcp
