#pragma once
// How to reach one MCP server, as the embedding API and the command line
// describe it. Plain data: no process is started and nothing is connected
// by making one.

#include "signals/error_info.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

struct mcp_server_config {
  // Prefixes its tools' names ("everything" → everything__echo):
  // letters, digits, '_' and '-', at most 32.
  std::string name;
  std::vector<std::string> command;  // a stdio server: the program and its arguments...
  std::string url;                   // ...or a Streamable HTTP endpoint
  // Sent with every HTTP request (an authorization token, say). Never logged.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds call_timeout{60'000};     // one tools/call
  std::chrono::milliseconds request_timeout{30'000};  // initialize, tools/list: the start-up's deadline
  std::chrono::milliseconds probe_timeout{5'000};     // server/discover, for a server that may not know it
  // Starts again after a death: at most max_restarts within restart_window,
  // then a pause that grows (mcp::client_options).
  int max_restarts = 5;
  std::chrono::milliseconds restart_window{60'000};
};

// What adding a server gave: the tools it registered, the listed tools it
// could not offer (each an mcp_invalid_tool error), or why it failed.
struct mcp_server_status {
  std::vector<std::string> tools;
  std::vector<error_info> rejected;
  std::optional<error_info> error;

  bool ok() const { return !error.has_value(); }
};

// "NAME=COMMAND ARG…" (words split on spaces; single or double quotes keep
// one word together) or "NAME=http(s)://…". A problem is the message.
std::optional<std::string> parse_mcp_server(std::string_view spec, mcp_server_config& out);

// "NAME:Header=ENVVAR": adds the header, its value read from the environment
// variable, to the server of that name in `servers`.
std::optional<std::string> parse_mcp_header(std::string_view spec, std::vector<mcp_server_config>& servers);

// The problem with a configuration, if any (a bad name, no command nor URL).
std::optional<std::string> check_mcp_server(const mcp_server_config& c);

}  // namespace troupe
