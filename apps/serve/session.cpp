#include "apps/serve/session.hpp"

#include "apps/serve/client_error.hpp"
#include "apps/serve/exchange.hpp"
#include "apps/serve/openai_chat.hpp"
#include "json/utf8.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace troupe::serve {

namespace net = boost::asio;
namespace beast = boost::beast;

void session_registry::add(const std::shared_ptr<session>& s) {
  std::lock_guard lock(mutex_);
  sessions_[s.get()] = s;
}

void session_registry::remove(const session* s) {
  std::lock_guard lock(mutex_);
  sessions_.erase(s);
}

std::size_t session_registry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void session_registry::drain_all() {
  std::vector<std::shared_ptr<session>> alive;
  {
    std::lock_guard lock(mutex_);
    for (auto& [_, weak] : sessions_)
      if (auto s = weak.lock()) alive.push_back(std::move(s));
  }
  for (auto& s : alive) s->drain();
}

namespace {

bool client_went_away(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == beast::error::timeout || ec == net::error::operation_aborted;
}

}  // namespace

session::session(net::ip::tcp::socket socket, connection_context& ctx)
    : stream_(std::move(socket)),
      read_deadline_(stream_.get_executor()),
      heartbeat_(stream_.get_executor()),
      ctx_(ctx) {}

session::~session() { ctx_.sessions.remove(this); }

void session::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

void session::drain() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->drain_asked_ = true;
    if (self->phase_ == phase::reading) self->close();
  });
}

void session::read_header() {
  phase_ = phase::reading;
  if (drain_asked_ || ctx_.draining) return close();
  parser_.emplace();
  route_ = nullptr;
  parser_->header_limit(16 * 1024);
  // Set once the head has been routed: until then a Content-Length past
  // it must not be refused before the key is checked.
  parser_->body_limit(boost::none);
  // Also how long an idle keep-alive connection stays open.
  start_read_deadline(ctx_.limits.header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void session::start_read_deadline(std::chrono::milliseconds limit) {
  stream_.expires_never();
  read_timed_out_ = false;
  read_deadline_.expires_after(limit);
  read_deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->phase_ != phase::reading) return;
    self->read_timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);  // the read ends with operation_aborted
  });
}

bool session::ended_by_read_deadline(const char* what, std::chrono::milliseconds limit) {
  read_deadline_.cancel();
  if (!read_timed_out_) return false;
  // A keep-alive connection that stayed idle just closes; one that began a
  // request learns why it was not answered.
  if (!parser_->got_some() && buffer_.size() == 0) {
    close();
    return true;
  }
  keep_alive_ = false;
  reply_now(refusal(http::status::request_timeout, "request_timeout",
                    std::string(what) + " did not arrive within " + std::to_string(limit.count()) + " ms"));
  return true;
}

void session::on_header(beast::error_code ec) {
  if (phase_ == phase::closing) return;
  if (ended_by_read_deadline("the request's head", ctx_.limits.header_timeout)) return;
  if (client_went_away(ec)) return close();
  if (ec) return refuse_request(ec);
  // The route and the key are judged on the head: a request refused there
  // is answered without its body ever being read.
  if (!route_request()) return;
  if (const auto length = parser_->content_length(); length && *length > ctx_.limits.max_body_bytes)
    return refuse_request(http::error::body_limit);
  parser_->body_limit(ctx_.limits.max_body_bytes);
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    body_after_write_ = true;
    return queue_message(http::message_generator(http::response<http::empty_body>(http::status::continue_, 11)));
  }
  read_body();
}

void session::refuse_request(beast::error_code ec) {
  keep_alive_ = false;  // after a malformed request the stream cannot be trusted
  if (ec == http::error::header_limit)
    return reply_now(refusal(http::status::request_header_fields_too_large, "headers_too_large",
                             "the request's headers exceed 16 KiB"));
  if (ec == http::error::body_limit)
    return reply_now(refusal(http::status::payload_too_large, "body_too_large",
                             "the body exceeds " + std::to_string(ctx_.limits.max_body_bytes) + " bytes"));
  reply_now(refusal(http::status::bad_request, "bad_request", "malformed HTTP request"));
}

void session::read_body() {
  if (parser_->is_done()) return dispatch_request();
  start_read_deadline(ctx_.limits.body_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void session::on_body(beast::error_code ec) {
  if (phase_ == phase::closing) return;
  if (ended_by_read_deadline("the request's body", ctx_.limits.body_timeout)) return;
  if (client_went_away(ec)) return close();
  if (ec) return refuse_request(ec);
  dispatch_request();
}

void session::record(const http_request& req, const std::string& route, unsigned status) const {
  request_record r{std::string(req.method_string()), route, status, {}, false};
  ctx_.observers.each([&](serve_observer& o) { o.request_finished(r); });
}

namespace {

// What of the request, taken as text, is not UTF-8 (decoded), if anything:
// what the server takes as text is stored and sent back in JSON, so it is
// refused rather than mended (it names things).
std::optional<std::string> not_utf8(const http_request& req, const boost::urls::url_view& url,
                                    const std::vector<std::string>& segments) {
  for (std::size_t i = 0; i < segments.size(); ++i)
    if (!is_valid_utf8(segments[i])) return "path segment " + std::to_string(i + 1);
  for (auto p : url.params())
    if (!is_valid_utf8(p.key) || !is_valid_utf8(p.value)) return std::string("a query parameter");
  for (const auto& f : req)
    if (!is_valid_utf8(f.value())) return "the " + std::string(f.name_string()) + " header";
  return std::nullopt;
}

}  // namespace

bool session::route_request() {
  const http_request& req = parser_->get();
  keep_alive_ = req.keep_alive();
  // A refusal leaves the body unread, and the connection cannot carry another request after it.
  auto refuse = [&](const std::string& route, http_response r) {
    record(req, route, r.result_int());
    if (!parser_->is_done()) keep_alive_ = false;
    reply_now(std::move(r));
    return false;
  };
  auto url = boost::urls::parse_origin_form(req.target());
  if (!url)
    return refuse("unmatched",
                  error_response(http::status::bad_request, "bad_request", "the request target is not a path"));
  std::vector<std::string> segments;
  for (auto s : url->segments()) segments.push_back(s);
  router::match m = ctx_.routes.find(req.method(), segments);
  if (!m.found) {
    const auto status = m.path_known ? http::status::method_not_allowed : http::status::not_found;
    return refuse("unmatched",
                  error_response(status, m.path_known ? "method_not_allowed" : "not_found",
                                 m.path_known ? "this path does not take " + std::string(req.method_string())
                                              : "no route for " + std::string(url->path())));
  }
  route_ = m.found;
  if (auto bad = not_utf8(req, *url, segments))
    return refuse(m.found->pattern, refusal(http::status::bad_request, "invalid_utf8", *bad + " is not valid UTF-8"));
  std::string user;
  if (!m.found->options.public_route) {
    const api_key* known = ctx_.keys.key_of(req[http::field::authorization]);
    if (!known) {
      http_response r = refusal(http::status::unauthorized, "unauthorized",
                                "this route needs a valid API key: Authorization: Bearer KEY");
      r.set(http::field::www_authenticate, "Bearer");
      return refuse(m.found->pattern, std::move(r));
    }
    if (known->role != m.found->options.role)
      return refuse(m.found->pattern,
                    error_response(http::status::forbidden, "forbidden",
                                   m.found->options.role == key_role::metrics
                                       ? "this route needs a metrics key (role = \"metrics\" in [[keys]])"
                                       : "a metrics key reads /metrics only"));
    if (const auto wait = ctx_.rates.take(known->user, rate_limiter::clock::now())) {
      http_response r = error_response(http::status::too_many_requests, "rate_limited",
                                       "your requests came faster than limits.requests_per_second and "
                                       "request_burst allow; the next is allowed in " +
                                           std::to_string(wait->count()) + " s");
      r.set(http::field::retry_after, std::to_string(wait->count()));
      return refuse(m.found->pattern, std::move(r));
    }
    user = known->user;
    if (ctx_.draining) {
      keep_alive_ = false;
      return refuse(m.found->pattern,
                    refusal(http::status::service_unavailable, "shutdown", "the server is shutting down"));
    }
  }
  routed_ = routed{m.found, std::move(m.params), std::string(url->encoded_query()), std::move(user)};
  return true;
}

http_response session::refusal(http::status status, std::string_view type, std::string_view message) const {
  if (!route_ || !route_->options.openai_errors) return error_response(status, type, message);
  const int code = static_cast<int>(status);
  return openai_response({code, std::string(openai_error_type(code)), std::string(message), {}, std::string(type)});
}

void session::dispatch_request() {
  phase_ = phase::handling;
  stream_.expires_never();
  http_request req = parser_->release();
  keep_alive_ = req.keep_alive();
  routed r = std::move(*routed_);
  routed_.reset();
  auto ex = std::make_shared<exchange>(shared_from_this(), std::move(req), r.route, std::move(r.params),
                                       std::move(r.query), std::move(r.user), ctx_.observers);
  try {
    r.route->handler(ex);
  } catch (const std::exception& e) {
    ex->respond(error_response(http::status::internal_server_error, "internal", client_message("internal", e.what())));
  }
}

void session::reply_now(http_response r) {
  phase_ = phase::finishing;
  if (drain_asked_ || ctx_.draining) keep_alive_ = false;
  r.keep_alive(keep_alive_);
  r.set(http::field::server, "troupe");
  r.prepare_payload();
  queue_message(http::message_generator(std::move(r)));
}

void session::send_response(http_response r) {
  net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
    if (self->phase_ == phase::handling) self->reply_now(std::move(r));
  });
}

void session::start_stream(std::weak_ptr<event_stream> stream) {
  net::post(stream_.get_executor(), [self = shared_from_this(), stream = std::move(stream)]() mutable {
    if (self->phase_ != phase::handling) {
      if (auto s = stream.lock()) s->client_gone("the client disconnected");
      return;
    }
    self->phase_ = phase::streaming;
    self->stream_owner_ = std::move(stream);
    // The watch's read starts before any write: the stream's expiry, which
    // each write sets, then applies to the writes alone.
    self->stream_.expires_never();
    self->watch_for_close();
    http::response<http::empty_body> head(http::status::ok, 11);
    head.set(http::field::server, "troupe");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache");
    head.set("X-Accel-Buffering", "no");
    head.chunked(true);
    head.keep_alive(self->keep_alive_);
    self->out_.push_back({{}, std::make_unique<stream_head>(std::move(head))});
    if (!self->writing_) self->write_next();
    self->last_chunk_ = std::chrono::steady_clock::now();
    self->arm_heartbeat();
  });
}

void session::send_chunk(std::string data) {
  net::post(stream_.get_executor(), [self = shared_from_this(), data = std::move(data)] {
    if (self->phase_ != phase::streaming || data.empty()) return;
    if (self->backlog_ + data.size() > self->ctx_.limits.max_stream_backlog_bytes)
      return self->close("the client read its event stream too slowly: more than " +
                         std::to_string(self->ctx_.limits.max_stream_backlog_bytes) +
                         " bytes (max_stream_backlog_bytes) were waiting to be sent");
    self->queue_chunk(std::move(data));
  });
}

void session::queue_chunk(std::string data) {
  last_chunk_ = std::chrono::steady_clock::now();
  // The frame views the data where the deque keeps it: nothing is copied.
  outgoing& o = out_.emplace_back();
  o.payload = std::move(data);
  o.bytes.emplace<chunk_frame>(http::make_chunk(net::const_buffer(o.payload.data(), o.payload.size())));
  backlog_ += beast::buffer_bytes(std::get<chunk_frame>(o.bytes));
  if (!writing_) write_next();
}

void session::arm_heartbeat() {
  heartbeat_.expires_at(last_chunk_ + ctx_.limits.stream_heartbeat);
  heartbeat_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->phase_ != phase::streaming) return;
    // SSE clients skip lines that start with a colon.
    if (self->last_chunk_ + self->ctx_.limits.stream_heartbeat <= std::chrono::steady_clock::now())
      self->queue_chunk(": heartbeat\n\n");
    self->arm_heartbeat();
  });
}

void session::end_stream() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ != phase::streaming) return;
    self->phase_ = phase::finishing;
    self->heartbeat_.cancel();
    self->stream_owner_.reset();
    self->out_.push_back({{}, last_frame(http::make_chunk_last())});
    if (!self->writing_) self->write_next();
  });
}

void session::queue_message(http::message_generator m) {
  out_.push_back({{}, std::move(m)});
  if (!writing_) write_next();
}

void session::write_next() {
  if (phase_ == phase::closing) return;
  if (out_.empty()) {
    writing_ = false;
    if (phase_ == phase::finishing) return after_answer();
    if (std::exchange(body_after_write_, false)) read_body();
    return;
  }
  writing_ = true;
  std::vector<net::const_buffer> pieces;
  beast::error_code ec;
  gather(pieces, ec);
  if (ec) return close();
  stream_.expires_after(ctx_.limits.write_timeout);
  stream_.async_write_some(
      pieces, [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_written(ec, n); });
}

void session::gather(std::vector<net::const_buffer>& pieces, beast::error_code& ec) {
  outgoing& front = out_.front();
  if (auto* m = std::get_if<http::message_generator>(&front.bytes)) {
    for (const auto& b : m->prepare(ec)) pieces.push_back(b);
    return;
  }
  if (auto* h = std::get_if<std::unique_ptr<stream_head>>(&front.bytes)) {
    (*h)->serializer.next(ec, [&](beast::error_code&, const auto& buffers) {
      for (const auto& b : beast::buffers_range_ref(buffers)) pieces.push_back(b);
    });
    return;
  }
  // A writev takes at most 64 buffers; a chunk is 5 or fewer.
  constexpr std::size_t most_pieces = 60;
  for (auto& o : out_) {
    if (pieces.size() >= most_pieces) break;
    if (auto* c = std::get_if<chunk_frame>(&o.bytes))
      for (const auto& b : *c) pieces.push_back(b);
    else if (auto* l = std::get_if<last_frame>(&o.bytes))
      for (const auto& b : *l) pieces.push_back(b);
    else
      break;
  }
}

// Takes the `n` bytes the socket took off the front of the queue.
void session::consume(std::size_t n) {
  while (!out_.empty()) {
    outgoing& front = out_.front();
    bool done = false;
    if (auto* m = std::get_if<http::message_generator>(&front.bytes)) {
      m->consume(std::exchange(n, 0));
      done = m->is_done();
    } else if (auto* h = std::get_if<std::unique_ptr<stream_head>>(&front.bytes)) {
      (*h)->serializer.consume(std::exchange(n, 0));
      done = (*h)->serializer.is_header_done();
    } else if (auto* c = std::get_if<chunk_frame>(&front.bytes)) {
      const std::size_t taken = std::min(beast::buffer_bytes(*c), n);
      c->consume(taken);
      n -= taken;
      backlog_ -= taken;
      done = beast::buffer_bytes(*c) == 0;
    } else if (auto* l = std::get_if<last_frame>(&front.bytes)) {
      const std::size_t taken = std::min(beast::buffer_bytes(*l), n);
      l->consume(taken);
      n -= taken;
      done = beast::buffer_bytes(*l) == 0;
    }
    if (!done) return;
    out_.pop_front();
    if (n == 0) return;
  }
}

void session::on_written(beast::error_code ec, std::size_t n) {
  if (phase_ == phase::closing) return;
  if (ec == beast::error::timeout)
    return close("the client read nothing of its answer for " + std::to_string(ctx_.limits.write_timeout.count()) +
                 " ms (write_timeout_seconds)");
  if (ec) return close();
  consume(n);
  write_next();
}

void session::after_answer() {
  if (!keep_alive_ || drain_asked_ || ctx_.draining) return close();
  // The watch's read ends in operation_aborted and carries on from there.
  if (watching_) return stream_.socket().cancel();
  read_header();
}

void session::watch_for_close() {
  watching_ = true;
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->watching_ = false;
    if (self->phase_ == phase::closing) return;
    if (!ec) {
      // The client's next request, pipelined: it is parsed after the stream.
      self->buffer_.commit(n);
      // after_answer() may have run already (the last chunk written), having
      // cancelled this read too late to abort it: then no one else reads on.
      if (self->phase_ == phase::reading || (self->phase_ == phase::finishing && !self->writing_)) self->read_header();
      return;
    }
    // The write's deadline closed the socket: the write's handler says why.
    if (ec == net::error::operation_aborted && self->writing_) return;
    if (ec == net::error::operation_aborted && self->phase_ == phase::finishing) return self->read_header();
    self->close();
  });
}

void session::notify_gone(const std::string& why) {
  if (auto s = stream_owner_.lock()) s->client_gone(why);
  stream_owner_.reset();
}

void session::close(const std::string& why) {
  if (phase_ == phase::closing) return;
  phase_ = phase::closing;
  read_deadline_.cancel();
  heartbeat_.cancel();
  notify_gone(why);
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace troupe::serve
