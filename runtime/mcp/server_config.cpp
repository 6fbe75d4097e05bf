#include "runtime/mcp/server_config.hpp"

#include <cstdlib>

namespace troupe {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::optional<std::string> split_words(std::string_view text, std::vector<std::string>& words) {
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word.push_back(c);
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (quote) return std::string("an unclosed quote in the command");
  if (in_word) words.push_back(std::move(word));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_mcp_server(const mcp_server_config& c) {
  if (c.name.empty() || c.name.size() > 32)
    return "an MCP server needs a name of 1 to 32 characters (got \"" + c.name + "\")";
  for (char ch : c.name)
    if (!name_char(ch)) return "the MCP server name \"" + c.name + "\" may hold only letters, digits, '_' and '-'";
  if (c.command.empty() == c.url.empty()) return "the MCP server " + c.name + " needs either a command or a URL";
  if (!c.url.empty() && !c.url.starts_with("http://") && !c.url.starts_with("https://"))
    return "the MCP server " + c.name + ": its URL must start with http:// or https://";
  if (!c.command.empty() && !c.headers.empty())
    return "the MCP server " + c.name + " runs a command: headers apply to HTTP servers only";
  return std::nullopt;
}

std::optional<std::string> parse_mcp_server(std::string_view spec, mcp_server_config& out) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) return "expected NAME=COMMAND or NAME=URL, got \"" + std::string(spec) + "\"";
  out.name = std::string(spec.substr(0, eq));
  const std::string_view target = spec.substr(eq + 1);
  if (target.starts_with("http://") || target.starts_with("https://")) {
    out.url = std::string(target);
  } else if (auto problem = split_words(target, out.command)) {
    return "the MCP server " + out.name + ": " + *problem;
  }
  return check_mcp_server(out);
}

std::optional<std::string> parse_mcp_header(std::string_view spec, std::vector<mcp_server_config>& servers) {
  const auto colon = spec.find(':');
  const auto eq = spec.find('=', colon == std::string_view::npos ? 0 : colon);
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq == colon + 1 || eq + 1 == spec.size())
    return "expected SERVER:Header=ENVVAR, got \"" + std::string(spec) + "\"";
  const std::string name(spec.substr(0, colon));
  const std::string header(spec.substr(colon + 1, eq - colon - 1));
  const std::string variable(spec.substr(eq + 1));
  for (auto& s : servers) {
    if (s.name != name) continue;
    const char* value = std::getenv(variable.c_str());
    if (!value || !*value)
      return "the environment variable " + variable + " (for " + name + ":" + header + ") is not set";
    s.headers.emplace_back(header, value);
    return std::nullopt;
  }
  return "--mcp-header names the MCP server " + name + ", which no --mcp defines";
}

}  // namespace troupe
