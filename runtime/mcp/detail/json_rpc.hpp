#pragma once
// JSON-RPC 2.0 as MCP uses it: one message per line on stdio, one per POST
// body or SSE event over HTTP. What a server sends is read without trusting
// it: anything that is not a well-formed message is a `malformed_message`
// saying what is wrong, never an exception.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace troupe::mcp {

// The standard codes, and the ones MCP reserves (-32020 to -32099).
namespace rpc_code {
inline constexpr std::int64_t parse_error = -32700;
inline constexpr std::int64_t invalid_request = -32600;
inline constexpr std::int64_t method_not_found = -32601;
inline constexpr std::int64_t invalid_params = -32602;
inline constexpr std::int64_t internal_error = -32603;
inline constexpr std::int64_t header_mismatch = -32020;
inline constexpr std::int64_t missing_required_client_capability = -32021;
inline constexpr std::int64_t unsupported_protocol_version = -32022;
}  // namespace rpc_code

struct rpc_error {
  std::int64_t code = 0;
  std::string message;
  boost::json::value data;  // null when absent
};

// A request id as the peer wrote it: a string or an integer.
using rpc_id = std::variant<std::int64_t, std::string>;

struct rpc_response {
  rpc_id id;
  std::variant<boost::json::object, rpc_error> outcome;
};

struct rpc_request {  // from the server: ping, sampling, roots, elicitation
  rpc_id id;
  std::string method;
  boost::json::object params;
};

struct rpc_notification {
  std::string method;
  boost::json::object params;
};

struct malformed_message {
  std::string why;
  std::optional<rpc_id> id;  // when the message named the request it answers
};

using rpc_message = std::variant<rpc_response, rpc_request, rpc_notification, malformed_message>;

rpc_message parse_rpc_message(std::string_view text);

// The messages of a JSON-RPC batch (a JSON array, as 2025-03-26 allowed), each
// as its own text; nullopt for anything that is not an array (one message, or
// something malformed that parse_rpc_message will name).
std::optional<std::vector<std::string>> split_rpc_batch(std::string_view text);

std::string encode_request(std::int64_t id, std::string_view method, boost::json::object params);
std::string encode_notification(std::string_view method, boost::json::object params);
std::string encode_result(const rpc_id& id, boost::json::object result);
std::string encode_error(const rpc_id& id, std::int64_t code, std::string_view message);

// "the MCP server answered with error -32601: Method not found"
std::string describe(const rpc_error& e);

}  // namespace troupe::mcp
