#include "apps/serve/turn.hpp"

#include "apps/serve/event_position.hpp"
#include "json/json_parse.hpp"

#include <algorithm>

namespace troupe::serve {

namespace json = boost::json;

namespace {

constexpr std::size_t event_overhead = sizeof(sse_event) + 16;

std::size_t bytes_of(const sse_event& e) { return event_overhead + e.name.size() + e.data.size(); }

// A delta event's text and thinking ("" when absent or not text).
std::pair<std::string, std::string> delta_texts(const sse_event& e) {
  boost::system::error_code ec;
  const json::value v = parse_json(e.data, ec);
  const auto text = [&](const char* key) {
    const json::value* x = v.is_object() ? v.as_object().if_contains(key) : nullptr;
    return x && x->is_string() ? std::string(x->get_string()) : std::string();
  };
  return {text("text"), text("thinking")};
}

json::object delta_data(std::string text, std::string thinking) {
  json::object o{{"text", std::move(text)}};
  if (!thinking.empty()) o["thinking"] = std::move(thinking);
  return o;
}

}  // namespace

std::uint64_t turn::subscribe(std::uint64_t after, sink s) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const sse_event& e = events_[i];
    const bool last = result_ && i + 1 == events_.size();
    if (e.id == 0) {
      if (start_ == 0 || after < start_) s(e, last);
      continue;
    }
    if (e.id <= after) continue;
    if (e.name == "message.delta" && seq_of(after) == seq_of(e.id) && after >= start_) {
      // The delta's bytes of its model call end at its id's offset: a reader
      // who saw some of them gets the rest.
      auto [text, thinking] = delta_texts(e);
      const std::uint64_t covered = text.size() + thinking.size();
      const std::uint64_t end = offset_of(e.id), seen = offset_of(after);
      if (covered <= end && seen > end - covered) {
        auto [thinking_left, text_left] = unseen_delta(thinking, text, seen - (end - covered));
        s(make_event(e.id, e.name, delta_data(std::move(text_left), std::move(thinking_left))), last);
        continue;
      }
    }
    s(e, last);
  }
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

void turn::push(std::string name, const boost::json::value& data, std::uint64_t id) {
  std::lock_guard lock(mutex_);
  if (result_) return;
  if (!events_.empty() && !first_agent_event_) first_agent_event_ = std::chrono::steady_clock::now();
  if (id != 0 && start_ == 0) start_ = event_id(seq_of(id), 0);
  events_.push_back(make_event(id, std::move(name), data));
  deliver(events_.back(), false);
}

void turn::finish(turn_result r, std::string name, const boost::json::value& data, std::uint64_t id) {
  std::vector<std::function<void(const turn_result&)>> waiting;
  {
    std::lock_guard lock(mutex_);
    if (result_) return;
    if (!first_agent_event_) first_agent_event_ = std::chrono::steady_clock::now();
    if (id != 0 && start_ == 0) start_ = event_id(seq_of(id), 0);
    events_.push_back(make_event(id, std::move(name), data));
    result_ = r;
    deliver(events_.back(), true);
    sinks_.clear();
    coalesce_deltas();
    waiting.swap(waiting_);
    request_.reset();
  }
  for (auto& f : waiting) f(r);
}

void turn::coalesce_deltas() {
  std::vector<sse_event> kept;
  kept.reserve(events_.size());
  kept_bytes_ = 0;
  // A run: the deltas of one model call (placed after one entry), in a row.
  auto in_run = [&](std::size_t first, std::size_t k) {
    return events_[k].name == "message.delta" && seq_of(events_[k].id) == seq_of(events_[first].id);
  };
  for (std::size_t i = 0; i < events_.size();) {
    std::size_t end = i;
    if (events_[i].name == "message.delta")
      while (end < events_.size() && in_run(i, end)) ++end;
    if (end - i < 2) {
      kept_bytes_ += bytes_of(events_[i]);
      kept.push_back(std::move(events_[i]));
      i = std::max(end, i + 1);
      continue;
    }
    std::string text, thinking;
    for (std::size_t k = i; k < end; ++k) {
      auto [t, th] = delta_texts(events_[k]);
      text += t;
      thinking += th;
    }
    kept.push_back(make_event(events_[end - 1].id, "message.delta", delta_data(std::move(text), std::move(thinking))));
    kept_bytes_ += bytes_of(kept.back());
    i = end;
  }
  events_ = std::move(kept);
  events_.shrink_to_fit();
}

std::uint64_t turn::newest_event_id() const {
  std::lock_guard lock(mutex_);
  for (auto it = events_.rbegin(); it != events_.rend(); ++it)
    if (it->id != 0) return it->id;
  return 0;
}

std::size_t turn::kept_bytes() const {
  std::lock_guard lock(mutex_);
  if (result_) return kept_bytes_;
  std::size_t n = 0;
  for (const sse_event& e : events_) n += bytes_of(e);
  return n;
}

}  // namespace troupe::serve
