#pragma once
// An OpenAI-compatible chat-completions server on 127.0.0.1 for benchmarks:
// every request gets a short stream after a fixed delay: the same one, or
// the one a function picks from the request's body (for a model that must
// call a tool first and answer once its result is in). One thread
// serves every connection, and the delay is a timer, not a sleeping thread
// (tests/support/http_test_server.hpp starts a thread a connection and
// closes each after one answer, which would be what a benchmark measures);
// connections are kept alive, as a real server's are.

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace troupe::bench {

inline const char* short_answer =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sure.\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";

class mock_model_server {
 public:
  // The answer for a request's body; the string must outlive the server.
  using answer_function = std::function<const std::string&(const std::string& body)>;

  explicit mock_model_server(std::chrono::microseconds latency, std::string answer = short_answer)
      : latency_(latency), answer_(std::move(answer)) {
    start();
  }
  mock_model_server(std::chrono::microseconds latency, answer_function pick)
      : latency_(latency), pick_(std::move(pick)) {
    start();
  }
  ~mock_model_server() {
    io_.stop();
    thread_.join();
  }
  mock_model_server(const mock_model_server&) = delete;
  mock_model_server& operator=(const mock_model_server&) = delete;

  std::string base_url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1";
  }
  std::uint64_t requests() const { return requests_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;

  struct session : std::enable_shared_from_this<session> {
    session(tcp::socket socket, mock_model_server& server)
        : stream(std::move(socket)), timer(stream.get_executor()), server(server) {}
    boost::beast::tcp_stream stream;
    boost::asio::steady_timer timer;
    mock_model_server& server;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> request;
    boost::beast::http::response<boost::beast::http::string_body> response;

    void read() {
      request = {};
      boost::beast::http::async_read(stream, buffer, request,
                                     [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
                                       if (ec) return;
                                       ++self->server.requests_;
                                       self->timer.expires_after(self->server.latency_);
                                       self->timer.async_wait([self](boost::beast::error_code) { self->answer(); });
                                     });
    }
    void answer() {
      response = {};
      response.result(boost::beast::http::status::ok);
      response.version(request.version());
      response.set(boost::beast::http::field::content_type, "text/event-stream");
      response.keep_alive(request.keep_alive());
      response.body() = server.pick_ ? server.pick_(request.body()) : server.answer_;
      response.prepare_payload();
      boost::beast::http::async_write(stream, response,
                                      [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
                                        if (ec || !self->response.keep_alive()) return;
                                        self->read();
                                      });
    }
  };

  void start() {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  void accept() {
    acceptor_.async_accept([this](boost::beast::error_code ec, tcp::socket socket) {
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        std::make_shared<session>(std::move(socket), *this)->read();
      }
      accept();
    });
  }

  std::chrono::microseconds latency_;
  std::string answer_;
  answer_function pick_;
  std::atomic<std::uint64_t> requests_{0};
  boost::asio::io_context io_;
  tcp::acceptor acceptor_{io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)};
  std::thread thread_;
};

}  // namespace troupe::bench
