#pragma once
// A small HTTP/1.1 server on 127.0.0.1 (a free port) for tests: it records
// every request and answers each from a script — a status, headers, and a
// body cut into chunks, optionally with pauses between them (a model that
// streams slowly) or stalling before the end (a connection that hangs).
// One thread per connection; every response closes its connection.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace troupe::testing {

struct scripted_http_response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> chunks;
  std::chrono::milliseconds pause{0};  // before each chunk after the first
  bool stall = false;                  // after the chunks, keep the connection open without ending

  static scripted_http_response sse(std::string body, std::size_t chunk_size = 0) {
    scripted_http_response r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    if (chunk_size == 0) chunk_size = body.size() ? body.size() : 1;
    for (std::size_t at = 0; at < body.size(); at += chunk_size) r.chunks.push_back(body.substr(at, chunk_size));
    return r;
  }
  // Reads the request and never answers: a peer that hangs.
  static scripted_http_response never() {
    scripted_http_response r;
    r.stall = true;
    return r;
  }
  static scripted_http_response json(int status, std::string body,
                                     std::vector<std::pair<std::string, std::string>> extra = {}) {
    scripted_http_response r;
    r.status = status;
    r.headers = {{"Content-Type", "application/json"}};
    for (auto& h : extra) r.headers.push_back(std::move(h));
    r.chunks = {std::move(body)};
    return r;
  }
};

struct recorded_request {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;

  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return {};
  }
};

class http_test_server {
 public:
  http_test_server() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 4096) != 0)
      throw std::runtime_error("http_test_server: cannot listen on 127.0.0.1");
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~http_test_server() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    ::close(listener_);
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(connections_);
    }
    for (auto& t : threads) t.join();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  void respond(scripted_http_response r) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(r));
  }
  // The answer once the script is used up (else a 500), for a server that
  // answers every request alike: a collector, say.
  void respond_always(scripted_http_response r) {
    std::lock_guard lock(mutex_);
    fallback_ = std::move(r);
  }
  // True once `n` requests were received (the answer may still be on its way).
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return received_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

  std::vector<recorded_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t request_count() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  // The most requests that were being answered at the same moment.
  std::size_t max_in_flight() const { return max_in_flight_.load(); }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    recorded_request req;
    if (read_request(fd, req)) {
      const std::size_t now = ++in_flight_;
      for (std::size_t seen = max_in_flight_.load(); now > seen && !max_in_flight_.compare_exchange_weak(seen, now);) {
      }
      scripted_http_response r;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(req);
        received_.notify_all();
        if (script_.empty()) {
          r = fallback_ ? *fallback_
                        : scripted_http_response::json(500, R"({"error":{"message":"no scripted response left"}})");
        } else {
          r = std::move(script_.front());
          script_.pop_front();
        }
      }
      write_response(fd, r);
      --in_flight_;
    }
    ::close(fd);
  }

  static bool read_request(int fd, recorded_request& req) {
    std::string data;
    char buf[4096];
    std::size_t header_end;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      data.append(buf, static_cast<std::size_t>(n));
    }
    const std::string head = data.substr(0, header_end);
    std::size_t line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    const auto sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
    req.method = request_line.substr(0, sp1);
    req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t content_length = 0;
    while (line_end != std::string::npos && line_end < head.size()) {
      const std::size_t next = head.find("\r\n", line_end + 2);
      const std::string line =
          head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
      line_end = next;
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      if (name == "content-length") content_length = std::stoul(value);
      req.headers.emplace_back(std::move(name), std::move(value));
    }
    req.body = data.substr(header_end + 4);
    while (req.body.size() < content_length) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      req.body.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }

  void write_response(int fd, const scripted_http_response& r) {
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " Scripted\r\n";
    for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
    head += "Connection: close\r\n\r\n";
    if (!send_all(fd, head)) return;
    for (std::size_t i = 0; i < r.chunks.size(); ++i) {
      if (i > 0 && r.pause.count() > 0 && wait_or_stop(r.pause)) return;
      if (!send_all(fd, r.chunks[i])) return;
    }
    if (r.stall) {
      // Hold the connection open until the client gives up or the test ends.
      while (!stopping_) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20) > 0) {
          char c;
          if (::recv(fd, &c, 1, 0) <= 0) return;
        }
      }
    }
  }

  // Sleeps (this is the fake model being slow) in short slices, so that a
  // stopping server does not wait out a long pause; no lock is shared, so a
  // thousand connections pausing at once do not contend.
  bool wait_or_stop(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!stopping_) {
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return false;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(10)));
    }
    return true;
  }

  static bool send_all(int fd, const std::string& s) {
    std::size_t sent = 0;
    while (sent < s.size()) {
      const ssize_t n = ::send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::size_t> max_in_flight_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable received_;
  std::deque<scripted_http_response> script_;
  std::optional<scripted_http_response> fallback_;
  std::vector<recorded_request> requests_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace troupe::testing
