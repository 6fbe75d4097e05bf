#include "runtime/mcp/detail/param_headers.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace troupe::mcp {

namespace json = boost::json;

namespace {

constexpr const char* annotation = "x-mcp-header";

// RFC 9110's tchar.
bool token(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
  });
}

// Every annotation anywhere in the schema, to catch those the properties
// chain does not reach (under items, anyOf, $defs, …).
std::size_t count_annotations(const json::value& v) {
  std::size_t n = 0;
  if (v.is_object()) {
    for (const auto& [key, child] : v.as_object()) n += (key == annotation) + count_annotations(child);
  } else if (v.is_array()) {
    for (const auto& child : v.as_array()) n += count_annotations(child);
  }
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string walk(const json::object& schema, std::vector<std::string>& path, std::vector<param_header>& out) {
  const auto* props = schema.if_contains("properties");
  if (!props || !props->is_object()) return {};
  for (const auto& [key, child] : props->as_object()) {
    if (!child.is_object()) continue;
    const json::object& property = child.as_object();
    path.emplace_back(key);
    if (const auto* h = property.if_contains(annotation)) {
      if (!h->is_string() || !token(h->as_string()))
        return "the x-mcp-header of \"" + std::string(key) + "\" is not an HTTP token";
      const auto* type = property.if_contains("type");
      const bool primitive =
          type && type->is_string() &&
          (type->as_string() == "string" || type->as_string() == "integer" || type->as_string() == "boolean");
      if (!primitive) return "x-mcp-header on \"" + std::string(key) + "\", which is not a string, integer or boolean";
      for (const auto& other : out)
        if (lower(other.name) == lower(std::string(h->as_string())))
          return "two parameters share the x-mcp-header \"" + other.name + "\"";
      out.push_back({path, std::string(h->as_string())});
    }
    if (auto problem = walk(property, path, out); !problem.empty()) return problem;
    path.pop_back();
  }
  return {};
}

}  // namespace

std::variant<std::vector<param_header>, std::string> find_param_headers(const json::object& schema) {
  std::vector<param_header> found;
  std::vector<std::string> path;
  if (auto problem = walk(schema, path, found); !problem.empty()) return problem;
  if (count_annotations(json::value(schema)) != found.size())
    return std::string("x-mcp-header where only a chain of \"properties\" may reach it");
  return found;
}

std::vector<std::pair<std::string, std::string>> param_header_values(const std::vector<param_header>& params,
                                                                     const json::object& arguments) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : params) {
    const json::value* v = nullptr;
    const json::object* level = &arguments;
    for (const auto& key : p.path) {
      v = level ? level->if_contains(key) : nullptr;
      level = v && v->is_object() ? &v->as_object() : nullptr;
    }
    if (!v || v->is_null()) continue;
    std::string text;
    if (v->is_string())
      text = v->as_string();
    else if (v->is_bool())
      text = v->as_bool() ? "true" : "false";
    else if (v->is_int64())
      text = std::to_string(v->as_int64());
    else if (v->is_uint64())
      text = std::to_string(v->as_uint64());
    else
      continue;  // the schema said otherwise; validation already refused it
    out.emplace_back("Mcp-Param-" + p.name, std::move(text));
  }
  return out;
}

}  // namespace troupe::mcp
