#include "apps/serve/turn_registry.hpp"

#include <algorithm>

namespace troupe::serve {

admission_verdict admit(double_texting policy, std::size_t unfinished, std::size_t max_queued) {
  if (unfinished == 0) return admission_verdict::start;
  switch (policy) {
    case double_texting::reject:
      return admission_verdict::busy;
    case double_texting::interrupt:
      return admission_verdict::start_after_interrupt;
    case double_texting::enqueue:
      break;
  }
  return unfinished >= 1 + max_queued ? admission_verdict::queue_full : admission_verdict::start;
}

turn_registry::admitted turn_registry::admit_turn(const std::string& conversation_id, const std::string& request_id,
                                                  const std::string& user, double_texting policy,
                                                  std::size_t max_queued, std::size_t max_per_user,
                                                  const std::function<std::shared_ptr<turn>()>& make) {
  std::lock_guard lock(mutex_);
  if (auto known = by_request_.find(request_id); known != by_request_.end())
    return {admission_verdict::existing, known->second, {}};
  auto& list = unfinished_[conversation_id];
  admitted a{admit(policy, list.size(), max_queued), nullptr, {}};
  if (a.verdict != admission_verdict::busy && a.verdict != admission_verdict::queue_full) {
    auto held = unfinished_by_user_.find(user);
    if (held != unfinished_by_user_.end() && held->second >= max_per_user) a.verdict = admission_verdict::user_limit;
  }
  if (a.verdict == admission_verdict::busy || a.verdict == admission_verdict::queue_full ||
      a.verdict == admission_verdict::user_limit) {
    if (list.empty()) unfinished_.erase(conversation_id);
    return a;
  }
  if (a.verdict == admission_verdict::start_after_interrupt) a.to_interrupt = list;
  a.started = make();
  list.push_back(a.started);
  by_request_[a.started->ids().request_id] = a.started;
  ++unfinished_count_;
  ++unfinished_by_user_[a.started->ids().user];
  return a;
}

void turn_registry::finished(const std::shared_ptr<turn>& t) {
  std::lock_guard lock(mutex_);
  auto it = unfinished_.find(t->ids().conversation_id);
  if (it == unfinished_.end()) return;
  auto& list = it->second;
  auto pos = std::find(list.begin(), list.end(), t);
  if (pos == list.end()) return;
  list.erase(pos);
  if (list.empty()) unfinished_.erase(it);
  --unfinished_count_;
  if (auto u = unfinished_by_user_.find(t->ids().user); u != unfinished_by_user_.end() && --u->second == 0)
    unfinished_by_user_.erase(u);
  last_finished_[t->ids().conversation_id] = t;
  if (unfinished_count_ == 0) idle_.notify_all();
}

bool turn_registry::hold_continuation(const std::string& user, std::size_t max_per_user) {
  std::lock_guard lock(mutex_);
  std::size_t& held = unfinished_by_user_[user];
  if (held >= max_per_user) {
    if (held == 0) unfinished_by_user_.erase(user);
    return false;
  }
  ++held;
  ++unfinished_count_;
  return true;
}

void turn_registry::continuation_ended(const std::string& user) {
  std::lock_guard lock(mutex_);
  if (auto u = unfinished_by_user_.find(user); u != unfinished_by_user_.end() && --u->second == 0)
    unfinished_by_user_.erase(u);
  if (--unfinished_count_ == 0) idle_.notify_all();
}

void turn_registry::keep(const std::shared_ptr<turn>& t) {
  const std::size_t bytes = t->kept_bytes();
  std::lock_guard lock(mutex_);
  // A paused turn told again with what its decisions added takes its place.
  by_request_[t->ids().request_id] = t;
  if (auto l = last_finished_.find(t->ids().conversation_id);
      l == last_finished_.end() || l->second->ids().request_id == t->ids().request_id)
    last_finished_[t->ids().conversation_id] = t;
  finished_.emplace_back(t, bytes);
  finished_bytes_ += bytes;
  // The newest one stays, however large: its retry must find it.
  while (finished_.size() > keep_finished_ || (finished_bytes_ > keep_finished_bytes_ && finished_.size() > 1)) {
    const std::shared_ptr<turn> old = finished_.front().first;
    finished_bytes_ -= finished_.front().second;
    finished_.pop_front();
    if (auto r = by_request_.find(old->ids().request_id); r != by_request_.end() && r->second == old)
      by_request_.erase(r);
    if (auto l = last_finished_.find(old->ids().conversation_id); l != last_finished_.end() && l->second == old)
      last_finished_.erase(l);
  }
}

void turn_registry::forget(const std::shared_ptr<turn>& t) {
  std::lock_guard lock(mutex_);
  if (auto r = by_request_.find(t->ids().request_id); r != by_request_.end() && r->second == t) by_request_.erase(r);
  if (auto l = last_finished_.find(t->ids().conversation_id); l != last_finished_.end() && l->second == t)
    last_finished_.erase(l);
}

std::size_t turn_registry::finished_bytes() const {
  std::lock_guard lock(mutex_);
  return finished_bytes_;
}

std::shared_ptr<turn> turn_registry::by_request(const std::string& request_id) const {
  std::lock_guard lock(mutex_);
  auto it = by_request_.find(request_id);
  return it == by_request_.end() ? nullptr : it->second;
}

std::shared_ptr<turn> turn_registry::current(const std::string& conversation_id) const {
  std::lock_guard lock(mutex_);
  if (auto it = unfinished_.find(conversation_id); it != unfinished_.end()) return it->second.front();
  auto it = last_finished_.find(conversation_id);
  return it == last_finished_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<turn>> turn_registry::unfinished(const std::string& conversation_id) const {
  std::lock_guard lock(mutex_);
  auto it = unfinished_.find(conversation_id);
  return it == unfinished_.end() ? std::vector<std::shared_ptr<turn>>{} : it->second;
}

std::size_t turn_registry::unfinished_count() const {
  std::lock_guard lock(mutex_);
  return unfinished_count_;
}

bool turn_registry::wait_idle(std::chrono::steady_clock::time_point until) const {
  std::unique_lock lock(mutex_);
  return idle_.wait_until(lock, until, [this] { return unfinished_count_ == 0; });
}

}  // namespace troupe::serve
