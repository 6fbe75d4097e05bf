#pragma once
// One client connection: reads requests one after another (HTTP/1.1
// keep-alive) under header and body deadlines and a body limit, hands each
// to its route, and writes the answers in order. An event stream is sent
// with chunked encoding, so the connection can carry more requests after it;
// while it is open the session watches the socket to learn at once when the
// client goes away. Everything runs on the connection's strand; the
// exchange's answers are posted to it from any thread.

#include "apps/serve/auth.hpp"
#include "apps/serve/config.hpp"
#include "apps/serve/http.hpp"
#include "apps/serve/observer.hpp"
#include "apps/serve/rate_limiter.hpp"
#include "apps/serve/router.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/message_generator.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace troupe::serve {

class event_stream;
class session;

// The sessions alive, so that a drain can close the idle ones.
class session_registry {
 public:
  void add(const std::shared_ptr<session>& s);
  void remove(const session* s);
  std::size_t size() const;
  // Closes connections waiting for a request; the busy ones close after
  // their current answer.
  void drain_all();

 private:
  mutable std::mutex mutex_;
  std::map<const session*, std::weak_ptr<session>> sessions_;
};

// What every connection shares.
struct connection_context {
  const router& routes;
  const key_table& keys;
  serve_limits limits;
  const observer_list& observers;
  std::atomic<bool>& draining;
  session_registry& sessions;
  rate_limiter& rates;
};

class session : public std::enable_shared_from_this<session> {
 public:
  session(boost::asio::ip::tcp::socket socket, connection_context& ctx);
  ~session();
  void start();
  void drain();

  // From the exchange and its stream, on any thread.
  void send_response(http_response r);
  void start_stream(std::weak_ptr<event_stream> stream);
  void send_chunk(std::string data);
  void end_stream();

 private:
  enum class phase { reading, handling, streaming, finishing, closing };

  void read_header();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void refuse_request(boost::beast::error_code ec);  // 400, 413 or 431, then close
  // Reading a request is bounded by a timer of its own rather than the
  // stream's expiry (which closes the socket): a client that began a request
  // and stalled is told so with a 408 before the connection closes.
  void start_read_deadline(std::chrono::milliseconds limit);
  // True if the read just ended by that deadline; a 408 has been sent or
  // the connection closed (an idle one, which had sent nothing).
  bool ended_by_read_deadline(const char* what, std::chrono::milliseconds limit);
  // Routes the request and checks its key, from its head alone; false
  // after answering a refusal.
  bool route_request();
  void dispatch_request();
  // The session's own error answer, in the shape the request's route asks for.
  http_response refusal(http::status status, std::string_view type, std::string_view message) const;
  void reply_now(http_response r);
  void record(const http_request& req, const std::string& route, unsigned status) const;
  // One thing to write, its bytes handed out as buffers and consumed as the
  // socket takes them: a whole response (Beast's message_generator), a
  // stream's head (its serializer, the head alone), a chunk of the stream
  // (make_chunk, viewing `payload`) or the stream's end (make_chunk_last).
  struct stream_head {
    explicit stream_head(http::response<http::empty_body> m) : message(std::move(m)) { serializer.split(true); }
    http::response<http::empty_body> message;
    http::response_serializer<http::empty_body> serializer{message};
  };
  using chunk_frame = boost::beast::buffers_suffix<http::chunk_body<boost::asio::const_buffer>>;
  using last_frame = boost::beast::buffers_suffix<http::chunk_last<http::chunk_crlf>>;
  struct outgoing {
    std::string payload;
    std::variant<std::monostate, http::message_generator, std::unique_ptr<stream_head>, chunk_frame, last_frame> bytes;
  };
  void queue_message(http::message_generator m);
  // Writes what is queued. Every write of the session starts here, under
  // write_timeout (the stream's expiry): a client that takes nothing of its
  // answer for that long is disconnected; one that takes some bytes starts
  // the next write, with a fresh deadline.
  void write_next();
  void on_written(boost::beast::error_code ec, std::size_t n);
  // The buffers of the next write: the front item's, or those of the chunks
  // at the front, sent together (a stream whose events come faster than the
  // client reads sends them in one gather write).
  void gather(std::vector<boost::asio::const_buffer>& pieces, boost::beast::error_code& ec);
  void consume(std::size_t n);
  // A comment line on a stream with nothing sent for stream_heartbeat.
  void arm_heartbeat();
  void queue_chunk(std::string data);
  void after_answer();
  void watch_for_close();
  // Ends the connection; a stream still open learns `why` (its turn may be
  // cancelled with that reason).
  void close(const std::string& why = "the client disconnected");
  void notify_gone(const std::string& why);

  boost::beast::tcp_stream stream_;
  boost::asio::steady_timer read_deadline_;
  bool read_timed_out_ = false;
  boost::asio::steady_timer heartbeat_;
  std::chrono::steady_clock::time_point last_chunk_;
  connection_context& ctx_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // What route_request() decided, for the request whose body is being read.
  struct routed {
    const router::route* route;
    path_params params;
    std::string query;
    std::string user;
  };
  std::optional<routed> routed_;
  const router::route* route_ = nullptr;  // the request's, once its head is routed
  phase phase_ = phase::reading;
  bool keep_alive_ = true;
  bool drain_asked_ = false;
  bool watching_ = false;
  bool writing_ = false;
  bool body_after_write_ = false;  // a 100 Continue is being written
  // A deque's elements stay where they are as more are queued behind them:
  // a chunk's frame views its payload in place.
  std::deque<outgoing> out_;
  std::size_t backlog_ = 0;  // the stream's bytes not yet written
  std::weak_ptr<event_stream> stream_owner_;
};

}  // namespace troupe::serve
