#pragma once
// An MCP server as a child process: JSON-RPC messages one per line on its
// stdin and stdout. Its stderr is kept (the last few kilobytes) to say why it
// died. The process runs in a process group of its own so that close() stops
// whatever it started too (npx starts node, which starts the server).

#include "runtime/mcp/transport.hpp"

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe::mcp {

struct stdio_options {
  std::vector<std::string> argv;                // argv[0] is looked up on PATH
  std::chrono::milliseconds stop_grace{2'000};  // after closing stdin, before SIGTERM (and again before SIGKILL)
  std::size_t max_message_bytes = 32 * 1024 * 1024;
};

class stdio_transport final : public transport {
 public:
  explicit stdio_transport(stdio_options options);
  ~stdio_transport() override;

  std::optional<error_info> open(transport_handlers handlers) override;
  std::uint64_t send(outgoing_message message) override;
  void close() override;

 private:
  // Everything the reader thread touches: it holds a reference, so the
  // transport may be closed and destroyed on that very thread (the last
  // owner of an MCP client can go away inside one of its callbacks).
  struct process;
  std::shared_ptr<process> p_;
};

}  // namespace troupe::mcp
