#pragma once
// MCP tools as troupe tools: names the model APIs accept, the listed tool's
// description and input schema as the spec, and a tools/call result as the
// outcome the model reads. Pure functions.

#include "directives/tool_spec.hpp"
#include "runtime/mcp/detail/client.hpp"
#include "runtime/mcp/detail/param_headers.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace troupe::mcp {

// "SERVER__TOOL", with every character outside [A-Za-z0-9_-] made '_' and the
// whole kept within 64 characters (OpenAI's and Anthropic's limit): a name
// that would be longer is cut and ends in a hash of the original, so two long
// names stay apart.
std::string troupe_tool_name(std::string_view server, std::string_view tool);

struct listed_tool {
  std::string mcp_name;                     // as the server calls it
  tool_spec spec;                           // as the model sees it
  std::vector<param_header> param_headers;  // over HTTP only
};

// One entry of a tools/list result; an mcp_invalid_tool error when it has no
// name or its inputSchema is not an object, or (with `http`, where its
// x-mcp-header annotations are honoured) when those are invalid.
std::variant<listed_tool, error_info> decode_listed_tool(const boost::json::value& v, std::string_view server,
                                                         bool http = false);

// A tools/call reply as a tool outcome: structuredContent when there is some,
// else the text of the content (one string; non-text items are described,
// not inlined); isError makes it an mcp_tool_error with that text.
tool_outcome outcome_of_call(rpc_reply reply, std::string_view server);

}  // namespace troupe::mcp
