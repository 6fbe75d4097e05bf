#include "apps/serve/turn.hpp"

namespace troupe::serve {

std::uint64_t turn::subscribe(std::uint64_t after, sink s) {
  std::lock_guard lock(mutex_);
  for (const sse_event& e : events_)
    if (e.id > after) s(e, result_ && &e == &events_.back());
  if (result_) return 0;
  const std::uint64_t id = next_sink_++;
  sinks_.emplace(id, std::move(s));
  return id;
}

void turn::unsubscribe(std::uint64_t subscription) {
  std::lock_guard lock(mutex_);
  sinks_.erase(subscription);
}

void turn::when_finished(std::function<void(const turn_result&)> f) {
  std::unique_lock lock(mutex_);
  if (!result_) {
    waiting_.push_back(std::move(f));
    return;
  }
  const turn_result r = *result_;
  lock.unlock();
  f(r);
}

bool turn::finished() const {
  std::lock_guard lock(mutex_);
  return result_.has_value();
}

std::optional<turn_result> turn::result() const {
  std::lock_guard lock(mutex_);
  return result_;
}

std::optional<std::chrono::steady_clock::time_point> turn::first_agent_event() const {
  std::lock_guard lock(mutex_);
  return first_agent_event_;
}

void turn::attach(request r) {
  std::optional<std::string> reason;
  {
    std::lock_guard lock(mutex_);
    request_ = r;
    reason = cancel_reason_;
  }
  if (reason) r.cancel(*reason);
}

void turn::cancel(const std::string& reason) {
  std::optional<request> r;
  {
    std::lock_guard lock(mutex_);
    if (result_) return;
    if (!request_) {
      cancel_reason_ = reason;
      return;
    }
    r = request_;
  }
  r->cancel(reason);
}

void turn::deliver(const sse_event& e, bool last) {
  for (auto& [_, s] : sinks_) s(e, last);
}

void turn::push(std::string name, const boost::json::value& data) {
  std::lock_guard lock(mutex_);
  if (result_) return;
  if (!events_.empty() && !first_agent_event_) first_agent_event_ = std::chrono::steady_clock::now();
  events_.push_back(make_event(events_.size() + 1, std::move(name), data));
  deliver(events_.back(), false);
}

void turn::finish(turn_result r, std::string name, const boost::json::value& data) {
  std::vector<std::function<void(const turn_result&)>> waiting;
  {
    std::lock_guard lock(mutex_);
    if (result_) return;
    if (!first_agent_event_) first_agent_event_ = std::chrono::steady_clock::now();
    events_.push_back(make_event(events_.size() + 1, std::move(name), data));
    result_ = r;
    deliver(events_.back(), true);
    sinks_.clear();
    waiting.swap(waiting_);
    request_.reset();
  }
  for (auto& f : waiting) f(r);
}

}  // namespace troupe::serve
