#include "apps/serve/listener.hpp"

#include "apps/serve/http.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <sstream>

namespace troupe::serve {

namespace net = boost::asio;

namespace {

// Built once as bytes: the out-of-descriptors path sends them with a
// plain send(), without an executor.
const std::string& busy_response() {
  static const std::string busy = [] {
    http_response r = error_response(http::status::service_unavailable, "too_many_connections",
                                     "the server is at its connection limit");
    r.set(http::field::server, "troupe");
    r.set(http::field::retry_after, "1");
    r.keep_alive(false);
    r.prepare_payload();
    std::ostringstream out;
    out << r;
    return out.str();
  }();
  return busy;
}

int take_reserve() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

bool out_of_descriptors(const boost::system::error_code& ec) {
  return ec == net::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system;
}

}  // namespace

listener::listener(net::io_context& io, const net::ip::tcp::endpoint& at, connection_context& ctx)
    : io_(io), acceptor_(net::make_strand(io)), retry_(acceptor_.get_executor()), reserve_(take_reserve()), ctx_(ctx) {
  acceptor_.open(at.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen(net::socket_base::max_listen_connections);
  // refuse_with_reserve() accepts on it directly, and must not wait.
  acceptor_.non_blocking(true);
  port_ = acceptor_.local_endpoint().port();
}

listener::~listener() {
  if (reserve_ >= 0) ::close(reserve_);
}

void listener::start() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] { self->accept(); });
}

void listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->retry_.cancel();
    self->acceptor_.close(ec);
  });
}

void listener::accept() {
  acceptor_.async_accept(net::make_strand(io_),
                         [self = shared_from_this()](boost::system::error_code ec, net::ip::tcp::socket socket) {
                           if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
                           if (ec == net::error::connection_aborted) return self->accept();
                           if (out_of_descriptors(ec) && self->refuse_with_reserve()) return self->accept();
                           if (ec) return self->back_off();
                           self->backoff_ = std::chrono::milliseconds(0);
                           if (self->ctx_.sessions.size() >= self->ctx_.limits.max_connections) {
                             self->refuse(std::move(socket));
                           } else {
                             socket.set_option(net::ip::tcp::no_delay(true), ec);
                             auto s = std::make_shared<session>(std::move(socket), self->ctx_);
                             self->ctx_.sessions.add(s);
                             s->start();
                           }
                           self->accept();
                         });
}

bool listener::refuse_with_reserve() {
  if (reserve_ >= 0) ::close(reserve_);
  // The listening socket is non-blocking, so this cannot wait: a client
  // that went away in between leaves nothing to accept.
  const int client = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  const bool nothing_waiting = client < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  if (client >= 0) {
    // A fresh socket's send buffer takes the few hundred bytes whole.
    const std::string& busy = busy_response();
    [[maybe_unused]] const ssize_t sent = ::send(client, busy.data(), busy.size(), MSG_NOSIGNAL);
    ::shutdown(client, SHUT_WR);
    ::close(client);
  }
  reserve_ = take_reserve();
  return reserve_ >= 0 && (client >= 0 || nothing_waiting);
}

void listener::back_off() {
  // Each failure in a row waits twice as long, up to a second; an accept
  // that succeeds starts over.
  backoff_ = std::min(std::chrono::milliseconds(1000), std::max(std::chrono::milliseconds(10), backoff_ * 2));
  retry_.expires_after(backoff_);
  retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || !self->acceptor_.is_open()) return;
    if (self->reserve_ < 0) self->reserve_ = take_reserve();
    self->accept();
  });
}

void listener::refuse(net::ip::tcp::socket socket) {
  auto s = std::make_shared<net::ip::tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(busy_response()), [s](boost::system::error_code, std::size_t) {
    boost::system::error_code ignored;
    s->shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    s->close(ignored);
  });
}

}  // namespace troupe::serve
