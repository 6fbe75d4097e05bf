#pragma once
// One request being answered: what a route handler gets. It answers once,
// with a whole response or with an event stream, from any thread (the
// answer is handed to the connection's own executor).

#include "apps/serve/http.hpp"
#include "apps/serve/router.hpp"
#include "apps/serve/sse.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::serve {

class session;
class observer_list;

// A text/event-stream answer that stays open until close(). send() calls
// are written in the order they are made.
class event_stream {
 public:
  event_stream(std::shared_ptr<session> s, std::function<void()> on_closed)
      : session_(std::move(s)), on_closed_(std::move(on_closed)) {}
  void send(const sse_event& e);
  void close();
  // `f` runs once if the client goes away before close() (at once if it
  // already has), told why: it disconnected, or it read too slowly.
  void on_disconnect(std::function<void(const std::string& why)> f);
  bool disconnected() const;

  // For the session.
  void client_gone(const std::string& why);

 private:
  std::shared_ptr<session> session_;
  mutable std::mutex mutex_;
  bool gone_ = false;
  bool closed_ = false;
  std::string why_gone_;
  std::function<void(const std::string&)> on_gone_;
  std::function<void()> on_closed_;
};

class exchange {
 public:
  exchange(std::shared_ptr<session> s, http_request request, const router::route* route, path_params params,
           std::string query, std::string user, const observer_list& observers);

  const http_request& request() const { return request_; }
  const std::string& user() const { return user_; }  // empty on a public route
  const std::string& route() const;
  // A path parameter by its name in the pattern; empty if there is none.
  std::string param(std::string_view name) const;
  // A query parameter (decoded), if given.
  std::optional<std::string> query(std::string_view key) const;
  std::string header(http::field f) const { return std::string(request_[f]); }
  bool wants_event_stream() const;

  // The first answer wins; later ones are dropped.
  void respond(http_response r);
  // nullptr if the exchange was answered already.
  std::shared_ptr<event_stream> open_stream();

 private:
  bool claim();
  void record(unsigned status, bool streamed) const;

  std::shared_ptr<session> session_;
  http_request request_;
  const router::route* route_;
  path_params params_;
  std::string query_;
  std::string user_;
  const observer_list& observers_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  bool answered_ = false;
};

}  // namespace troupe::serve
