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
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
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

  pid_t pid() const { return pid_; }

 private:
  void read_loop();
  std::string stderr_tail() const;
  std::optional<int> try_reap(bool block);

  stdio_options options_;
  transport_handlers handlers_;
  pid_t pid_ = -1;
  int to_child_ = -1;    // the child's stdin (a socket: MSG_NOSIGNAL spares us SIGPIPE)
  int from_child_ = -1;  // its stdout
  int errors_ = -1;      // its stderr
  int stop_pipe_[2] = {-1, -1};
  std::thread reader_;
  std::mutex write_mutex_;
  mutable std::mutex mutex_;  // guards what follows
  std::string stderr_tail_;
  bool reaped_ = false;
  int exit_status_ = 0;
  bool closing_ = false;
  std::uint64_t next_handle_ = 1;
};

}  // namespace troupe::mcp
