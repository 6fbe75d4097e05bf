#pragma once
// 2026-07-28's x-mcp-header: a tool's input schema may name parameters whose
// values a Streamable HTTP client mirrors into `Mcp-Param-{name}` headers
// (so that gateways can route on them without reading the body). An
// annotation is valid only on a string, integer or boolean property reached
// from the root through `properties` alone, with a token for a name that no
// other annotation of the schema shares (ignoring case); a tool with any
// other annotation is not offered.

#include <boost/json/object.hpp>

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::mcp {

struct param_header {
  std::vector<std::string> path;  // property names from the root
  std::string name;               // the header is "Mcp-Param-" + name
};

// The schema's annotations, or what is wrong with them.
std::variant<std::vector<param_header>, std::string> find_param_headers(const boost::json::object& schema);

// The headers for one call's arguments: a value absent or null sends none.
std::vector<std::pair<std::string, std::string>> param_header_values(const std::vector<param_header>& params,
                                                                     const boost::json::object& arguments);

}  // namespace troupe::mcp
