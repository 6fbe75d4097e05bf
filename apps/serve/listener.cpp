#include "apps/serve/listener.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

namespace troupe::serve {

namespace net = boost::asio;

listener::listener(net::io_context& io, const net::ip::tcp::endpoint& at, connection_context& ctx)
    : io_(io), acceptor_(net::make_strand(io)), ctx_(ctx) {
  acceptor_.open(at.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen(net::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
}

void listener::start() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] { self->accept(); });
}

void listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
  });
}

void listener::accept() {
  acceptor_.async_accept(net::make_strand(io_),
                         [self = shared_from_this()](boost::system::error_code ec, net::ip::tcp::socket socket) {
                           if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
                           if (!ec) {
                             if (self->ctx_.sessions.size() >= self->ctx_.limits.max_connections) {
                               self->refuse(std::move(socket));
                             } else {
                               socket.set_option(net::ip::tcp::no_delay(true), ec);
                               auto s = std::make_shared<session>(std::move(socket), self->ctx_);
                               self->ctx_.sessions.add(s);
                               s->start();
                             }
                           }
                           // Errors such as running out of descriptors end one accept, not the server.
                           self->accept();
                         });
}

void listener::refuse(net::ip::tcp::socket socket) {
  static const std::string busy = [] {
    const std::string body =
        "{\"error\":{\"type\":\"too_many_connections\",\"message\":\"the server is at its connection limit\"}}\n";
    return "HTTP/1.1 503 Service Unavailable\r\nServer: troupe\r\nContent-Type: application/json\r\n"
           "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  auto s = std::make_shared<net::ip::tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(busy), [s](boost::system::error_code, std::size_t) {
    boost::system::error_code ignored;
    s->shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    s->close(ignored);
  });
}

}  // namespace troupe::serve
