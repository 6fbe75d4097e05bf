#include "runtime/mcp/stdio_transport.hpp"

#include "runtime/mcp/protocol.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace troupe::mcp {

namespace {

constexpr std::size_t stderr_keep = 4096;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

struct stdio_transport::process {
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

  ~process() {
    if (reader_.joinable()) reader_.detach();  // only when closed on the reader itself, which ends now
    close_fd(to_child_);
    close_fd(from_child_);
    close_fd(errors_);
    close_fd(stop_pipe_[0]);
    close_fd(stop_pipe_[1]);
  }
  std::optional<error_info> open(transport_handlers handlers, std::shared_ptr<process> self);
  std::uint64_t send(outgoing_message message);
  void read_loop();
  std::string stderr_tail() const;
  std::optional<int> try_reap(bool block);
  void close();
};

stdio_transport::stdio_transport(stdio_options options) : p_(std::make_shared<process>()) {
  p_->options_ = std::move(options);
}

stdio_transport::~stdio_transport() { close(); }

std::optional<error_info> stdio_transport::open(transport_handlers handlers) {
  return p_->open(std::move(handlers), p_);
}

std::uint64_t stdio_transport::send(outgoing_message message) { return p_->send(std::move(message)); }

void stdio_transport::close() { p_->close(); }

std::optional<error_info> stdio_transport::process::open(transport_handlers handlers, std::shared_ptr<process> self) {
  handlers_ = std::move(handlers);
  if (options_.argv.empty()) return error_info::of(mcp_error::unavailable, "no command to start the MCP server with");
  int in[2], out[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0)
    return error_info::of(mcp_error::unavailable, std::string("socketpair: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(stop_pipe_, O_CLOEXEC) != 0)
    return error_info::of(mcp_error::unavailable, std::string("pipe: ") + std::strerror(errno));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[1], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A group of its own: close() signals the whole group, and a Ctrl-C meant
  // for troupe does not kill the server under a call.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (auto& a : options_.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[1]);
  ::close(out[1]);
  ::close(err[1]);
  to_child_ = in[0];
  from_child_ = out[0];
  errors_ = err[0];
  if (rc != 0) {
    pid_ = -1;
    close_fd(to_child_);
    close_fd(from_child_);
    close_fd(errors_);
    return error_info::of(mcp_error::unavailable, "cannot start " + options_.argv.front() + ": " + std::strerror(rc));
  }
  reader_ = std::thread([self] { self->read_loop(); });
  return std::nullopt;
}

std::uint64_t stdio_transport::process::send(outgoing_message message) {
  std::uint64_t handle;
  {
    std::lock_guard lock(mutex_);
    handle = next_handle_++;
  }
  std::optional<error_info> failure;
  {
    std::lock_guard lock(write_mutex_);
    message.text.push_back('\n');
    std::string_view rest = message.text;
    while (!rest.empty()) {
      const ssize_t n = to_child_ < 0 ? -1 : ::send(to_child_, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failure = error_info::of(mcp_error::server_exited,
                                 "cannot write to the MCP server (" + std::string(std::strerror(errno)) + ")");
        break;
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  if (message.on_sent) message.on_sent(std::move(failure));
  return handle;
}

std::optional<int> stdio_transport::process::try_reap(bool block) {
  std::lock_guard lock(mutex_);
  if (reaped_) return exit_status_;
  if (pid_ < 0) return std::nullopt;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    exit_status_ = status;
    return status;
  }
  return std::nullopt;
}

std::string stdio_transport::process::stderr_tail() const {
  std::lock_guard lock(mutex_);
  std::string tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (const auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
  return tail;
}

void stdio_transport::process::read_loop() {
  std::string line;
  bool discarding = false;  // the rest of an oversized line
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[3] = {
        {out_open ? from_child_ : -1, POLLIN, 0}, {err_open ? errors_ : -1, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents) return;  // close() takes over
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
    }
    if (fds[1].revents) {
      const ssize_t n = ::read(errors_, buf, sizeof buf);
      if (n <= 0) {
        err_open = false;
      } else {
        std::lock_guard lock(mutex_);
        stderr_tail_.append(buf, static_cast<std::size_t>(n));
        if (stderr_tail_.size() > stderr_keep) stderr_tail_.erase(0, stderr_tail_.size() - stderr_keep);
      }
    }
    if (fds[0].revents) {
      const ssize_t n = ::read(from_child_, buf, sizeof buf);
      if (n <= 0) {
        out_open = false;
        continue;
      }
      for (std::string_view chunk(buf, static_cast<std::size_t>(n)); !chunk.empty();) {
        const auto nl = chunk.find('\n');
        const std::string_view part = chunk.substr(0, nl);
        if (!discarding) line.append(part);
        if (line.size() > options_.max_message_bytes) {
          line.clear();
          discarding = true;
          handlers_.on_message("(a message longer than " + std::to_string(options_.max_message_bytes) +
                               " bytes, dropped)");
        }
        if (nl == std::string_view::npos) break;
        chunk.remove_prefix(nl + 1);
        if (!discarding) {
          if (!line.empty() && line.back() == '\r') line.pop_back();
          if (!line.empty()) handlers_.on_message(line);
        }
        line.clear();
        discarding = false;
      }
    }
  }
  // Its stdout closed: it is exiting, or did. Wait a little for the status.
  std::optional<int> status;
  const auto until = std::chrono::steady_clock::now() + options_.stop_grace;
  while (!(status = try_reap(false)) && std::chrono::steady_clock::now() < until) {
    pollfd stop{stop_pipe_[0], POLLIN, 0};
    if (::poll(&stop, 1, 20) > 0) return;
  }
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
  }
  std::string why = status ? "the MCP server " + describe_status(*status) : "the MCP server closed its stdout";
  if (auto tail = stderr_tail(); !tail.empty()) why += " (its last words: " + tail + ")";
  if (handlers_.on_closed) handlers_.on_closed(error_info::of(mcp_error::server_exited, why));
}

void stdio_transport::process::close() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  if (pid_ >= 0) {
    // Stdin closed first: a well-behaved server exits by itself.
    if (to_child_ >= 0) ::shutdown(to_child_, SHUT_WR);
    for (int sig : {0, SIGTERM, SIGKILL}) {
      if (sig) ::kill(-pid_, sig);
      const auto until = std::chrono::steady_clock::now() + options_.stop_grace;
      bool gone = false;
      while (!(gone = try_reap(false).has_value()) && std::chrono::steady_clock::now() < until) ::poll(nullptr, 0, 10);
      if (gone) break;
    }
    try_reap(true);
    ::kill(-pid_, SIGKILL);  // anything it left behind in its group
  }
  if (stop_pipe_[1] >= 0) {
    const char c = 0;
    [[maybe_unused]] auto ignored = ::write(stop_pipe_[1], &c, 1);
  }
  if (reader_.joinable()) {
    if (reader_.get_id() == std::this_thread::get_id()) {
      // Closed from one of its own callbacks: it sees the stop pipe once
      // that returns, and ~process closes the descriptors after it.
      reader_.detach();
      return;
    }
    reader_.join();
  }
  std::lock_guard lock(write_mutex_);
  close_fd(to_child_);
  close_fd(from_child_);
  close_fd(errors_);
  close_fd(stop_pipe_[0]);
  close_fd(stop_pipe_[1]);
}

}  // namespace troupe::mcp
