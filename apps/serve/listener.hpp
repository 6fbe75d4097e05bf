#pragma once
// Accepts connections and starts a session for each, on its own strand. Past
// max_connections a new connection is answered 503 at once and closed, so
// a flood of sockets cannot exhaust the process's descriptors.

#include "apps/serve/session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>

namespace troupe::serve {

class listener : public std::enable_shared_from_this<listener> {
 public:
  // Binds at once: throws std::system_error if the address is taken.
  listener(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& at, connection_context& ctx);
  void start();
  void stop();  // thread-safe
  std::uint16_t port() const { return port_; }

 private:
  void accept();
  void refuse(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  connection_context& ctx_;
  std::uint16_t port_ = 0;
};

}  // namespace troupe::serve
