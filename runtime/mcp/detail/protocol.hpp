#pragma once
// The MCP revisions troupe speaks, and the rules that differ between them.
//
// Modern (2026-07-28): no handshake; every request carries its protocol
// version and client capabilities in `params._meta`; `server/discover` tells
// what a server supports; results carry a `resultType`.
// Legacy (2025-11-25, 2025-06-18, 2025-03-26): an `initialize` request and a
// `notifications/initialized` notification open a session (over HTTP, one
// named by `Mcp-Session-Id`). 2025-03-26 also let either side send several
// messages as one JSON array (a batch): troupe sends none, and reads one.
// The versioning page of 2026-07-28 says how a client that speaks both finds
// out which one a server speaks: try modern first, and fall back on any
// error that is not a recognised modern one.

#include "runtime/mcp/detail/json_rpc.hpp"
#include "signals/error_info.hpp"

#include <boost/json/object.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace troupe::mcp {

inline constexpr std::string_view modern_version = "2026-07-28";
// Newest first: the one asked for in `initialize`, then what else is accepted.
inline constexpr std::array<std::string_view, 3> legacy_versions{"2025-11-25", "2025-06-18", "2025-03-26"};

// "2026-07-28, 2025-11-25, 2025-06-18 and 2025-03-26", for errors.
std::string spoken_versions();

enum class era { modern, legacy };

// The error types an MCP server's failures become (tool results the model
// reads, or why a server could not be added).
namespace mcp_error {
inline constexpr const char* unavailable = "mcp_unavailable";      // could not start or reach it
inline constexpr const char* server_exited = "mcp_server_exited";  // died while a call ran
inline constexpr const char* unsupported_version = "mcp_unsupported_version";
inline constexpr const char* rpc_error = "mcp_error";                        // a JSON-RPC error response
inline constexpr const char* tool_error = "mcp_tool_error";                  // a result with isError
inline constexpr const char* invalid_tool = "mcp_invalid_tool";              // a listed tool troupe cannot offer
inline constexpr const char* unsupported_result = "mcp_unsupported_result";  // input_required (MRTR)
}  // namespace mcp_error

// A result, a JSON-RPC error the server answered with, or a failure of ours
// (timeout, cancelled, the server exited, malformed_response, …).
using rpc_reply = std::variant<boost::json::object, rpc_error, error_info>;

bool is_legacy_version(std::string_view v);

// `params` with the modern `_meta` keys added (protocol version, client
// capabilities, client info).
boost::json::object with_modern_meta(boost::json::object params);

// The params of a legacy `initialize`.
boost::json::object initialize_params();

// A JSON-RPC error code only a modern server sends: one of these in answer to
// the modern probe means "modern, but something is wrong", not "legacy".
bool is_modern_error(std::int64_t code);

// The versions a modern UnsupportedProtocolVersion error lists in data.supported.
std::vector<std::string> supported_versions(const rpc_error& e);

// Checks a result's `resultType`: absent or "complete" is fine (servers of
// the earlier revisions send none); "input_required" asks for a multi
// round-trip request troupe does not implement; anything else is invalid.
std::optional<error_info> check_result_type(const boost::json::object& result, std::string_view server);

// What the answer to the server/discover probe says. A result means modern
// (unless its supportedVersions leaves 2026-07-28 out); an
// UnsupportedProtocolVersion error listing a legacy version we speak, any
// error that is not a modern one, an HTTP 4xx or no answer at all mean
// legacy (initialize next); a modern error otherwise, a server that exited or
// refused our credentials, or one we could not reach, end the attempt.
struct speak_modern {};
struct speak_legacy {};
using probe_verdict = std::variant<speak_modern, speak_legacy, error_info>;
probe_verdict judge_probe(const rpc_reply& reply, std::string_view server);

// A JSON-RPC error response as the error the caller sees.
error_info error_of(const rpc_error& e, std::string_view server);

}  // namespace troupe::mcp
