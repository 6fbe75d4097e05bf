#include "apps/serve/exchange.hpp"

#include "apps/serve/observer.hpp"
#include "apps/serve/session.hpp"

#include <boost/url/params_view.hpp>

namespace troupe::serve {

void event_stream::send(const sse_event& e) {
  std::lock_guard lock(mutex_);
  if (closed_ || gone_) return;
  session_->send_chunk(format_sse(e));
}

void event_stream::close() {
  std::function<void()> closed;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    closed = std::move(on_closed_);
    if (!gone_) session_->end_stream();
  }
  if (closed) closed();
}

void event_stream::on_disconnect(std::function<void(const std::string&)> f) {
  std::string why;
  {
    std::lock_guard lock(mutex_);
    if (!gone_) {
      on_gone_ = std::move(f);
      return;
    }
    why = why_gone_;
  }
  if (f) f(why);
}

bool event_stream::disconnected() const {
  std::lock_guard lock(mutex_);
  return gone_;
}

void event_stream::client_gone(const std::string& why) {
  std::function<void(const std::string&)> f;
  {
    std::lock_guard lock(mutex_);
    if (gone_ || closed_) return;
    gone_ = true;
    why_gone_ = why;
    f = std::move(on_gone_);
  }
  if (f) f(why);
  close();  // the exchange is over for the observers too
}

exchange::exchange(std::shared_ptr<session> s, http_request request, const router::route* route, path_params params,
                   std::string query, std::string user, const observer_list& observers)
    : session_(std::move(s)),
      request_(std::move(request)),
      route_(route),
      params_(std::move(params)),
      query_(std::move(query)),
      user_(std::move(user)),
      observers_(observers) {}

const std::string& exchange::route() const { return route_->pattern; }

std::string exchange::param(std::string_view name) const {
  for (const auto& [k, v] : params_)
    if (k == name) return v;
  return {};
}

std::optional<std::string> exchange::query(std::string_view key) const {
  boost::urls::params_view params(query_);
  auto it = params.find(key);
  if (it == params.end()) return std::nullopt;
  return std::string((*it).value);
}

bool exchange::wants_event_stream() const {
  return request_[http::field::accept].find("text/event-stream") != boost::beast::string_view::npos;
}

bool exchange::claim() {
  std::lock_guard lock(mutex_);
  if (answered_) return false;
  answered_ = true;
  return true;
}

void exchange::record(unsigned status, bool streamed) const {
  request_record r{std::string(request_.method_string()), route_->pattern, status,
                   std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_),
                   streamed};
  observers_.each([&](serve_observer& o) { o.request_finished(r); });
}

void exchange::respond(http_response r) {
  if (!claim()) return;
  record(r.result_int(), false);
  session_->send_response(std::move(r));
}

std::shared_ptr<event_stream> exchange::open_stream() {
  if (!claim()) return nullptr;
  observers_.each([](serve_observer& o) { o.stream_opened(); });
  // The stream outlives this exchange object only through its own reference.
  request_record done{std::string(request_.method_string()), route_->pattern, 200, {}, true};
  auto stream = std::make_shared<event_stream>(session_, [done, started = started_, &observers = observers_]() mutable {
    done.duration = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    observers.each([&](serve_observer& o) {
      o.request_finished(done);
      o.stream_closed();
    });
  });
  session_->start_stream(stream);
  return stream;
}

}  // namespace troupe::serve
