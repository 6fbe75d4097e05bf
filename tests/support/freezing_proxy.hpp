#pragma once
// A TCP proxy on 127.0.0.1 (a free port) in front of a server, that can be
// frozen: from then on nothing passes either way, and connections made
// after are accepted and never answered. To its clients the server looks
// stopped (SIGSTOP) or cut off, without stopping a server other tests share.
// One thread per connection and one accepting; all end with the proxy.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace troupe::testing {

class freezing_proxy {
 public:
  freezing_proxy(const std::string& host, int port) {
    target_.sin_family = AF_INET;
    target_.sin_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &target_.sin_addr) != 1)
      throw std::runtime_error("freezing_proxy: not an IPv4 address: " + host);
    if (pipe(freeze_.data()) != 0 || pipe(stop_.data()) != 0) throw std::runtime_error("freezing_proxy: pipe");
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listener_, 64) != 0 || getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("freezing_proxy: cannot listen");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~freezing_proxy() {
    (void)!write(stop_[1], "x", 1);  // never read: readable for every thread from now on
    // The acceptor is the only one that starts pumps: they can be joined after it.
    acceptor_.join();
    for (std::thread& t : pumps_) t.join();
    for (int fd : fds_) close(fd);
    for (int fd : {listener_, freeze_[0], freeze_[1], stop_[0], stop_[1]}) close(fd);
  }
  freezing_proxy(const freezing_proxy&) = delete;
  freezing_proxy& operator=(const freezing_proxy&) = delete;

  int port() const { return port_; }
  void freeze() { (void)!write(freeze_[1], "x", 1); }

 private:
  bool frozen() const {
    pollfd p{freeze_[0], POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }
  void keep(int fd) {
    std::lock_guard lock(mutex_);
    fds_.push_back(fd);
  }

  void accept_loop() {
    for (;;) {
      std::array<pollfd, 2> p{pollfd{listener_, POLLIN, 0}, pollfd{stop_[0], POLLIN, 0}};
      if (poll(p.data(), p.size(), -1) < 0 || p[1].revents) return;
      const int client = accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      keep(client);
      if (frozen()) continue;  // accepted, never answered
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      keep(server);
      if (connect(server, reinterpret_cast<const sockaddr*>(&target_), sizeof target_) != 0) continue;
      pumps_.emplace_back([this, client, server] { pump(client, server); });
    }
  }

  // Copies bytes both ways until either side closes, the proxy freezes (then
  // it holds them, and waits only for the end) or the proxy ends.
  void pump(int a, int b) {
    char buf[16384];
    for (;;) {
      std::array<pollfd, 4> p{pollfd{a, POLLIN, 0}, pollfd{b, POLLIN, 0}, pollfd{freeze_[0], POLLIN, 0},
                              pollfd{stop_[0], POLLIN, 0}};
      if (poll(p.data(), p.size(), -1) < 0 || p[3].revents) return;
      if (p[2].revents) {
        pollfd end{stop_[0], POLLIN, 0};
        poll(&end, 1, -1);
        return;
      }
      for (int i = 0; i < 2; ++i) {
        if (!p[i].revents) continue;
        const ssize_t n = read(p[i].fd, buf, sizeof buf);
        if (n <= 0) {
          shutdown(i == 0 ? b : a, SHUT_WR);
          return;
        }
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w = write(i == 0 ? b : a, buf + sent, static_cast<std::size_t>(n - sent));
          if (w <= 0) return;
          sent += w;
        }
      }
    }
  }

  sockaddr_in target_{};
  std::array<int, 2> freeze_{-1, -1};
  std::array<int, 2> stop_{-1, -1};
  int listener_ = -1;
  int port_ = 0;
  std::mutex mutex_;
  std::vector<int> fds_;
  std::thread acceptor_;
  std::vector<std::thread> pumps_;
};

}  // namespace troupe::testing
