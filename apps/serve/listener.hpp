#pragma once
// Accepts connections and starts a session for each, on its own strand. Past
// max_connections a new connection is answered 503 at once and closed, so
// a flood of sockets cannot exhaust the process's descriptors.
//
// Should the process run out of descriptors all the same (a low
// RLIMIT_NOFILE, the store's files), accept() fails with EMFILE while the
// client stays queued in the kernel: retried at once, that spins a core and
// leaves the client hanging. The listener keeps one descriptor in reserve
// for that case: it lets it go, takes the client, answers 503 and closes it,
// then takes the reserve again. If even that fails it backs off before the
// next accept instead of spinning.

#include "apps/serve/session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

#include <memory>

namespace troupe::serve {

class listener : public std::enable_shared_from_this<listener> {
 public:
  // Binds at once: throws std::system_error if the address is taken.
  listener(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& at, connection_context& ctx);
  ~listener();
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  void start();
  void stop();  // thread-safe
  std::uint16_t port() const { return port_; }

 private:
  void accept();
  void refuse(boost::asio::ip::tcp::socket socket);
  // Out of descriptors: refuses the waiting client with the reserve's
  // descriptor; false if the reserve could not be had again.
  bool refuse_with_reserve();
  void back_off();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  std::chrono::milliseconds backoff_{0};
  int reserve_ = -1;
  connection_context& ctx_;
  std::uint16_t port_ = 0;
};

}  // namespace troupe::serve
