#pragma once
// A small synchronous HTTP/1.1 client for the serve tests (Boost.Beast): one
// keep-alive connection, whole answers, and event streams read event by
// event as they arrive.

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::testing {

namespace http = boost::beast::http;

struct http_reply {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  bool keep_alive = true;

  boost::json::value json() const { return boost::json::parse(body); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  std::string error_type() const { return std::string(json().at("error").at("type").as_string()); }
};

struct sse_message {
  std::string name;
  std::uint64_t id = 0;
  boost::json::value data;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

class http_client {
 public:
  explicit http_client(unsigned short port) : stream_(io_) {
    stream_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  }

  void write(http::verb method, const std::string& target, const std::string& body, const header_list& headers) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty() || method == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    http::write(stream_, req);
  }

  http_reply send(http::verb method, const std::string& target, const std::string& body = {},
                  const header_list& headers = {}) {
    write(method, target, body, headers);
    return read_reply();
  }

  http_reply read_reply() {
    http::response_parser<http::string_body> p;
    p.body_limit(64 << 20);
    http::read(stream_, buffer_, p);
    return to_reply(p.get());
  }

  // The head of a streamed answer; then next_event() until it returns nullopt.
  http_reply open_stream(const std::string& target, const std::string& body, const header_list& headers,
                         http::verb method = http::verb::post) {
    header_list h = headers;
    h.emplace_back("Accept", "text/event-stream");
    write(method, target, body, h);
    parser_.emplace();
    parser_->body_limit(64 << 20);
    http::read_header(stream_, buffer_, *parser_);
    consumed_ = 0;
    return to_reply(parser_->get());
  }

  std::optional<sse_message> next_event() {
    for (;;) {
      const std::string& body = parser_->get().body();
      const auto end = body.find("\n\n", consumed_);
      if (end != std::string::npos) {
        const std::string block = body.substr(consumed_, end - consumed_);
        consumed_ = end + 2;
        return parse_event(block);
      }
      if (parser_->is_done()) return std::nullopt;
      http::read_some(stream_, buffer_, *parser_);
    }
  }

  std::vector<sse_message> rest_of_stream() {
    std::vector<sse_message> out;
    while (auto e = next_event()) out.push_back(std::move(*e));
    return out;
  }

  // True when the server closed the connection (a read hits end of stream).
  bool closed_by_server() {
    boost::beast::error_code ec;
    char c;
    stream_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  void send_raw(const std::string& bytes) { boost::asio::write(stream_, boost::asio::buffer(bytes)); }
  void close() {
    boost::beast::error_code ec;
    stream_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    stream_.close(ec);
  }

 private:
  template <class Message>
  static http_reply to_reply(const Message& m) {
    http_reply r;
    r.status = m.result_int();
    for (const auto& f : m) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string(f.value());
    }
    r.body = m.body();
    r.keep_alive = m.keep_alive();
    return r;
  }

  static sse_message parse_event(const std::string& block) {
    sse_message e;
    std::size_t at = 0;
    while (at < block.size()) {
      auto nl = block.find('\n', at);
      if (nl == std::string::npos) nl = block.size();
      const std::string line = block.substr(at, nl - at);
      at = nl + 1;
      if (line.rfind("event: ", 0) == 0) e.name = line.substr(7);
      if (line.rfind("id: ", 0) == 0) e.id = std::stoull(line.substr(4));
      if (line.rfind("data: ", 0) == 0) e.data = boost::json::parse(line.substr(6));
    }
    return e;
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::size_t consumed_ = 0;
};

}  // namespace troupe::testing
