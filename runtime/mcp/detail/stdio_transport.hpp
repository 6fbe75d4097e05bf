#pragma once
// An MCP server as a child process: JSON-RPC messages one per line on its
// stdin and stdout. Its stderr is kept (the last few kilobytes) to say why it
// died. The process runs in a process group of its own so that close() stops
// whatever it started too (npx starts node, which starts the server).
//
// One I/O thread owns the pipes. send() only queues (a caller never waits
// for a server that is not reading), up to `max_queued_bytes`; the thread
// writes when the pipe takes more, reads what comes back, and watches the
// process itself, not only its pipes: a server that exits while something it
// started keeps its stdout or stderr open, or that closes its stdout (or
// stdin) and stays alive, is reported gone at once (the latter after
// `stop_grace`, killed first).

#include "runtime/mcp/detail/transport.hpp"

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
  // What may wait to be written to a server that is not reading; a message
  // past it fails at once with queue_full (one message alone is always
  // taken, whatever its size, or a large one could never be sent).
  std::size_t max_queued_bytes = 16 * 1024 * 1024;
};

class stdio_transport final : public transport {
 public:
  explicit stdio_transport(stdio_options options);
  ~stdio_transport() override;

  std::optional<error_info> open(transport_handlers handlers) override;
  std::uint64_t send(outgoing_message message) override;
  bool withdraw(std::uint64_t handle) override;
  void close() override;

 private:
  // Everything the I/O thread touches: it holds a reference, so the
  // transport may be closed and destroyed on that very thread (the last
  // owner of an MCP client can go away inside one of its callbacks).
  struct process;
  std::shared_ptr<process> p_;
};

}  // namespace troupe::mcp
