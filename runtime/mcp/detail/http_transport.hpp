#pragma once
// An MCP server behind a Streamable HTTP endpoint: each message is a POST;
// a request's response comes back as one JSON body or as an SSE stream that
// ends with it. The session id a legacy server assigns (Mcp-Session-Id) and
// the negotiated protocol version go out on every later POST, with the
// caller's own headers (an authorization token, say), which are never
// logged or put in an error.

#include "runtime/mcp/detail/transport.hpp"
#include "runtime/net/http_client.hpp"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace troupe::mcp {

struct http_options {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{10'000};
  std::size_t max_response_bytes = 32 * 1024 * 1024;
};

class http_transport final : public transport {
 public:
  http_transport(http_options options, std::shared_ptr<http_client> client);
  ~http_transport() override;

  std::optional<error_info> open(transport_handlers handlers) override;
  std::uint64_t send(outgoing_message message) override;
  void abort(std::uint64_t handle) override;
  void close() override;
  bool exchange_per_request() const override { return true; }

 private:
  struct exchange;
  void forget(std::uint64_t id);

  http_options options_;
  std::shared_ptr<http_client> client_;
  transport_handlers handlers_;
  std::mutex mutex_;
  std::string session_id_;
  std::set<std::uint64_t> in_flight_;
  bool closed_ = false;
};

}  // namespace troupe::mcp
