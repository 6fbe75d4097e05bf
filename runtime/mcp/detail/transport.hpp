#pragma once
// How JSON-RPC messages reach an MCP server and come back: a child process's
// stdin and stdout, or POSTs to an HTTP endpoint. The client above does not
// know which; it sends messages and is handed what arrives.
//
// Callbacks run on the transport's own thread (the stdio or the HTTP I/O
// thread), or on_sent's failure in send() itself, and must not block.

#include "signals/error_info.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::mcp {

struct outgoing_message {
  std::string text;    // one JSON-RPC request or notification
  std::string method;  // for the HTTP headers that mirror the body
  std::string name;    // params.name of tools/call, else empty
  // The revision it is written in (HTTP's MCP-Protocol-Version); empty for
  // `initialize`, which has none yet.
  std::string protocol_version;
  // More HTTP headers (x-mcp-header parameters), values not yet encoded.
  std::vector<std::pair<std::string, std::string>> headers{};
  // Called once the transport is done with the message: nullopt when it
  // went out (and, over HTTP, its response stream ended), else why it failed.
  // A response that arrives still goes to on_message first.
  std::function<void(std::optional<error_info>)> on_sent{};
};

struct transport_handlers {
  std::function<void(std::string_view text)> on_message;
  // The connection is gone for good (the process exited): every request
  // still waiting fails with this.
  std::function<void(error_info why)> on_closed;
};

class transport {
 public:
  virtual ~transport() = default;
  // Starts the process, or checks nothing (HTTP connects per request).
  virtual std::optional<error_info> open(transport_handlers handlers) = 0;
  // Never waits for the server: a message it cannot take yet is queued, or
  // fails through on_sent. Returns a handle for abort() and withdraw().
  virtual std::uint64_t send(outgoing_message message) = 0;
  // Stops waiting for that message's response (HTTP: closes its stream).
  virtual void abort(std::uint64_t) {}
  // Takes back a message none of which has gone out yet (stdio: still queued
  // for a server that is not reading). True if it did: the server never saw
  // it, so there is nothing to cancel there, and its on_sent never runs.
  virtual bool withdraw(std::uint64_t) { return false; }
  // True when every request gets a response stream of its own (HTTP): its
  // end without a response is then a failure of that request.
  virtual bool exchange_per_request() const { return false; }
  // Stops the process / aborts every transfer. No callback runs afterwards.
  virtual void close() = 0;
};

}  // namespace troupe::mcp
