// The server is started with posix_spawn and watched in one poll loop, not
// through Boost.Process, for what the latter would take away: the server in a
// process group of its own with a clean signal mask (so a stop reaches what it
// started), a socketpair as its stdin (a server that closes stdin cannot
// raise SIGPIPE in the embedding program, which pipes would allow), its exit
// seen through a pidfd in the same poll as its output, and a grace period
// before the kill for a server that closed its streams but kept running.
#include "runtime/mcp/detail/stdio_transport.hpp"

#include "runtime/mcp/detail/protocol.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>

extern char** environ;

namespace troupe::mcp {

namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t stderr_keep = 4096;
// Without a pidfd (an old kernel, a sandbox that refuses one) the process is
// asked this often whether it exited.
constexpr milliseconds exit_poll{50};
// What is read from a gone server's stdout and stderr at most: what it wrote
// before it exited is in the pipes, but something it started may go on
// writing for ever.
constexpr int drain_reads = 16;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// A descriptor that becomes readable when the process exits, or -1 (then it
// is polled with waitpid). Nothing else reaps our children, so the pid
// cannot have been reused meanwhile.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);  // close-on-exec, always
  if (fd >= 0) return static_cast<int>(fd);
#endif
  (void)pid;
  return -1;
}

// No wait status is negative.
constexpr int unknown_status = -1;

std::string describe_status(int status) {
  if (status == unknown_status) return "exited";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

int poll_timeout(clock::time_point until) {
  const auto left = std::chrono::ceil<milliseconds>(until - clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

enum class got { data, nothing, end };

struct queued {
  std::uint64_t handle;
  std::string text;
  std::size_t written = 0;
  std::function<void(std::optional<error_info>)> on_sent;
};

}  // namespace

struct stdio_transport::process {
  stdio_options options_;
  transport_handlers handlers_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int to_child_ = -1;    // the child's stdin (a socket: MSG_NOSIGNAL spares us SIGPIPE)
  int from_child_ = -1;  // its stdout
  int errors_ = -1;      // its stderr
  int wake_[2] = {-1, -1};
  std::thread io_;
  // The I/O thread's alone: a line of stdout read in part.
  std::string line_;
  bool discarding_ = false;   // the rest of an oversized line
  mutable std::mutex mutex_;  // guards what follows
  std::deque<queued> queue_;
  std::size_t queued_bytes_ = 0;  // not written yet
  std::optional<error_info> gone_;
  std::string stderr_tail_;
  bool reaped_ = false;
  int exit_status_ = 0;
  bool closing_ = false;
  std::uint64_t next_handle_ = 1;

  ~process() {
    if (io_.joinable()) io_.detach();  // only when closed on the I/O thread itself, which ends now
    close_fds();
  }
  void close_fds() {
    close_fd(to_child_);
    close_fd(from_child_);
    close_fd(errors_);
    close_fd(pidfd_);
    close_fd(wake_[0]);
    close_fd(wake_[1]);
  }
  std::optional<error_info> open(transport_handlers handlers, std::shared_ptr<process> self);
  std::uint64_t send(outgoing_message message);
  bool withdraw(std::uint64_t handle);
  void wake();
  void run();
  got read_stdout();
  got read_stderr();
  bool write_some(int& error);
  void finish(const std::string& why);
  bool wait_for_exit(milliseconds limit);
  bool closing() const;
  std::string stderr_tail() const;
  std::optional<int> try_reap();
  void stop_process();
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

bool stdio_transport::withdraw(std::uint64_t handle) { return p_->withdraw(handle); }

void stdio_transport::close() { p_->close(); }

std::optional<error_info> stdio_transport::process::open(transport_handlers handlers, std::shared_ptr<process> self) {
  handlers_ = std::move(handlers);
  if (options_.argv.empty()) return error_info::of(mcp_error::unavailable, "no command to start the MCP server with");
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  const auto fail = [&](const char* what, int error) {
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) close_fd(*fd);
    close_fds();
    return error_info::of(mcp_error::unavailable, std::string(what) + ": " + std::strerror(error));
  };
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) return fail("socketpair", errno);
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return fail("pipe", errno);
  // Our ends only: the child's stay blocking, as programs expect.
  if (!set_nonblocking(in[0]) || !set_nonblocking(out[0]) || !set_nonblocking(err[0])) return fail("fcntl", errno);

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
  close_fd(in[1]);
  close_fd(out[1]);
  close_fd(err[1]);
  to_child_ = std::exchange(in[0], -1);
  from_child_ = std::exchange(out[0], -1);
  errors_ = std::exchange(err[0], -1);
  if (rc != 0) {
    pid_ = -1;
    close_fds();
    return error_info::of(mcp_error::unavailable, "cannot start " + options_.argv.front() + ": " + std::strerror(rc));
  }
  pidfd_ = open_pidfd(pid_);
  io_ = std::thread([self] { self->run(); });
  return std::nullopt;
}

void stdio_transport::process::wake() {
  const char c = 0;
  // A full pipe is a wake-up already pending.
  [[maybe_unused]] auto ignored = ::write(wake_[1], &c, 1);
}

std::uint64_t stdio_transport::process::send(outgoing_message message) {
  std::uint64_t handle;
  std::optional<error_info> failure;
  {
    std::lock_guard lock(mutex_);
    handle = next_handle_++;
    message.text.push_back('\n');
    if (gone_) {
      failure = gone_;
    } else if (closing_ || pid_ < 0) {
      failure = error_info::of(mcp_error::server_exited, "the MCP server was stopped");
    } else if (!queue_.empty() && queued_bytes_ + message.text.size() > options_.max_queued_bytes) {
      failure =
          error_info::of(error_type::queue_full,
                         "the MCP server is not reading what troupe writes to it: " + std::to_string(queued_bytes_) +
                             " bytes wait to be written, and " + std::to_string(message.text.size()) +
                             " more would pass the limit of " + std::to_string(options_.max_queued_bytes));
    } else {
      const bool idle = queue_.empty();
      queued_bytes_ += message.text.size();
      queue_.push_back(queued{handle, std::move(message.text), 0, std::move(message.on_sent)});
      if (idle) wake();
      return handle;
    }
  }
  if (message.on_sent) message.on_sent(std::move(failure));
  return handle;
}

bool stdio_transport::process::withdraw(std::uint64_t handle) {
  std::lock_guard lock(mutex_);
  const auto it = std::find_if(queue_.begin(), queue_.end(), [&](const queued& q) { return q.handle == handle; });
  if (it == queue_.end() || it->written > 0) return false;
  queued_bytes_ -= it->text.size();
  queue_.erase(it);
  return true;
}

bool stdio_transport::process::closing() const {
  std::lock_guard lock(mutex_);
  return closing_;
}

std::optional<int> stdio_transport::process::try_reap() {
  std::lock_guard lock(mutex_);
  if (reaped_) return exit_status_;
  if (pid_ < 0) return std::nullopt;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  // ECHILD: reaped for us (SIGCHLD ignored, say), its status lost; a pidfd
  // that stays readable must not be polled again.
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    exit_status_ = r == pid_ ? status : unknown_status;
    return exit_status_;
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

got stdio_transport::process::read_stderr() {
  char buf[4096];
  const ssize_t n = ::read(errors_, buf, sizeof buf);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? got::nothing : got::end;
  if (n == 0) return got::end;
  std::lock_guard lock(mutex_);
  stderr_tail_.append(buf, static_cast<std::size_t>(n));
  if (stderr_tail_.size() > stderr_keep) stderr_tail_.erase(0, stderr_tail_.size() - stderr_keep);
  return got::data;
}

got stdio_transport::process::read_stdout() {
  char buf[65536];
  const ssize_t n = ::read(from_child_, buf, sizeof buf);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? got::nothing : got::end;
  if (n == 0) return got::end;
  for (std::string_view chunk(buf, static_cast<std::size_t>(n)); !chunk.empty();) {
    const auto nl = chunk.find('\n');
    const std::string_view part = chunk.substr(0, nl);
    if (!discarding_) line_.append(part);
    if (line_.size() > options_.max_message_bytes) {
      line_.clear();
      discarding_ = true;
      handlers_.on_message("(a message longer than " + std::to_string(options_.max_message_bytes) + " bytes, dropped)");
    }
    if (nl == std::string_view::npos) break;
    chunk.remove_prefix(nl + 1);
    if (!discarding_) {
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      // A message may have closed the transport (on this thread): none after.
      if (!line_.empty() && !closing()) handlers_.on_message(line_);
    }
    line_.clear();
    discarding_ = false;
  }
  return got::data;
}

bool stdio_transport::process::write_some(int& error) {
  std::vector<std::function<void(std::optional<error_info>)>> written;
  bool ok = true;
  {
    std::lock_guard lock(mutex_);
    while (!queue_.empty()) {
      queued& q = queue_.front();
      const ssize_t n =
          ::send(to_child_, q.text.data() + q.written, q.text.size() - q.written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          ok = false;
          error = errno;
        }
        break;
      }
      q.written += static_cast<std::size_t>(n);
      queued_bytes_ -= static_cast<std::size_t>(n);
      if (q.written < q.text.size()) continue;
      if (q.on_sent) written.push_back(std::move(q.on_sent));
      queue_.pop_front();
    }
  }
  for (auto& on_sent : written) on_sent(std::nullopt);
  return ok;
}

void stdio_transport::process::run() {
  bool out_open = true, err_open = true, in_open = true;
  // When its stdout or stdin closed while it ran on, and which: it may be on
  // its way out, so it gets stop_grace to exit before it is killed.
  std::optional<clock::time_point> broken_at;
  std::string broken;
  for (;;) {
    bool want_write;
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      want_write = in_open && !queue_.empty();
    }
    int timeout = pidfd_ < 0 ? static_cast<int>(exit_poll.count()) : -1;
    if (broken_at) {
      const int left = poll_timeout(*broken_at + options_.stop_grace);
      timeout = timeout < 0 ? left : std::min(timeout, left);
    }
    pollfd fds[5] = {{wake_[0], POLLIN, 0},
                     {out_open ? from_child_ : -1, POLLIN, 0},
                     {err_open ? errors_ : -1, POLLIN, 0},
                     // Watched while it is open even with nothing to write: a hang-up
                     // says the server closed its stdin.
                     {in_open ? to_child_ : -1, static_cast<short>(want_write ? POLLOUT : 0), 0},
                     {pidfd_, POLLIN, 0}};
    if (::poll(fds, 5, timeout) < 0) {
      if (errno == EINTR) continue;
      return finish(std::string("could not be watched: ") + std::strerror(errno));
    }
    if (closing()) return;
    if (fds[0].revents) {
      char buf[64];
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    if (fds[2].revents && read_stderr() == got::end) err_open = false;
    const got out = fds[1].revents ? read_stdout() : got::nothing;
    if (closing()) return;  // a message's callback closed the transport
    if (out == got::end) {
      out_open = false;
      if (!broken_at) {
        broken_at = clock::now();
        broken = "closed its stdout";
      }
    }
    if (int error = EPIPE; fds[3].revents && !(want_write && write_some(error))) {
      in_open = false;
      if (!broken_at) {
        broken_at = clock::now();
        broken =
            error == EPIPE ? "closed its stdin" : std::string("could not be written to (") + std::strerror(error) + ")";
      }
    }
    if (pidfd_ < 0 || fds[4].revents)
      if (auto status = try_reap()) return finish(describe_status(*status));
    if (broken_at && clock::now() >= *broken_at + options_.stop_grace) {
      ::kill(-pid_, SIGKILL);
      wait_for_exit(options_.stop_grace);
      return finish(broken + " but kept running, so it was killed");
    }
  }
}

bool stdio_transport::process::wait_for_exit(milliseconds limit) {
  const auto until = clock::now() + limit;
  for (;;) {
    if (try_reap()) return true;
    if (clock::now() >= until) return false;
    pollfd exited{pidfd_, POLLIN, 0};
    ::poll(&exited, 1, std::min(10, poll_timeout(until)));
  }
}

void stdio_transport::process::finish(const std::string& why) {
  for (int i = 0; i < drain_reads && read_stdout() == got::data; ++i) {
  }
  for (int i = 0; i < drain_reads && read_stderr() == got::data; ++i) {
  }
  std::string message = "the MCP server " + why;
  if (auto tail = stderr_tail(); !tail.empty()) message += " (its last words: " + tail + ")";
  const error_info e = error_info::of(mcp_error::server_exited, std::move(message));
  {
    // What is still queued will never be written: the requests among it
    // fail with the rest, through on_closed.
    std::lock_guard lock(mutex_);
    gone_ = e;
    queue_.clear();
    queued_bytes_ = 0;
    if (closing_) return;
  }
  if (handlers_.on_closed) handlers_.on_closed(e);
}

void stdio_transport::process::stop_process() {
  if (pid_ < 0) return;
  // Stdin closed first: a well-behaved server exits by itself.
  if (to_child_ >= 0) ::shutdown(to_child_, SHUT_WR);
  for (int sig : {0, SIGTERM, SIGKILL}) {
    if (sig) ::kill(-pid_, sig);
    // Not waited for past SIGKILL's grace (a process stuck in the kernel):
    // closing is bounded, at worst a zombie is left.
    if (wait_for_exit(options_.stop_grace)) break;
  }
  ::kill(-pid_, SIGKILL);  // anything it left behind in its group
}

void stdio_transport::process::close() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (wake_[1] >= 0) wake();
  const bool on_io_thread = io_.joinable() && io_.get_id() == std::this_thread::get_id();
  // Joined first: no callback runs while the process is being stopped.
  if (io_.joinable() && !on_io_thread) io_.join();
  stop_process();
  if (on_io_thread) {
    // Closed from one of its own callbacks: the thread sees closing_ once
    // that returns, and ~process closes the descriptors after it.
    io_.detach();
    return;
  }
  close_fds();
}

}  // namespace troupe::mcp
