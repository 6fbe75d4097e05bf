#include "runtime/llm/endpoint_pool.hpp"

#include "runtime/detail/thrown_by.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace troupe {

// One call to the pool, across its attempts. `at`, `member`, `attempt`,
// `handle`, `timer` and the retry counts are guarded by the pool's mutex;
// `closed` by `deliver`, which is held while a delta goes to the caller, so
// that once cancel() has taken it no delta starts.
struct endpoint_pool::pending {
  enum class phase { queued, starting, running, backing_off, cancelling, done };

  llm_stream request;
  llm_callbacks callbacks;
  phase at = phase::queued;
  std::size_t member = 0;
  std::uint64_t attempt = 0;  // an answer from an earlier attempt is stale
  std::unique_ptr<llm_call> handle;
  std::uint64_t timer = 0;
  int rate_limit_retries = 0;
  int other_retries = 0;
  std::mutex deliver;
  bool closed = false;  // cancelled, or its result taken
  std::atomic<bool> streamed{false};
};

class pool_call final : public llm_call {
 public:
  pool_call(endpoint_pool& pool, std::shared_ptr<endpoint_pool::pending> call) : pool_(pool), call_(std::move(call)) {}
  void cancel() override { pool_.cancel(call_); }

 private:
  endpoint_pool& pool_;
  std::shared_ptr<endpoint_pool::pending> call_;
};

endpoint_pool::endpoint_pool(std::vector<pool_member> members, endpoint_pool_options options)
    : options_(std::move(options)) {
  if (members.empty()) throw std::invalid_argument("an endpoint pool needs at least one member");
  for (auto& m : members) {
    if (!m.provider) throw std::invalid_argument("the pool member " + m.name + " has no provider");
    if (m.max_concurrency == 0) throw std::invalid_argument("the pool member " + m.name + " has a cap of 0 calls");
    members_.push_back(member_state{std::move(m)});
  }
}

endpoint_pool::~endpoint_pool() {
  std::vector<std::shared_ptr<pending>> live;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    // The waiting calls all at once: one by one, each would be looked for in the queue.
    for (const auto& call : queue_) call->at = pending::phase::done;
    queue_.clear();
    live.assign(live_.begin(), live_.end());
  }
  for (const auto& call : live) cancel(call);
}

std::string_view endpoint_pool::name() const { return members_.front().spec.provider->name(); }

std::size_t endpoint_pool::retries() const {
  std::size_t n;
  {
    std::lock_guard lock(mutex_);
    n = retries_;
  }
  for (const auto& m : members_) n += m.spec.provider->retries();
  return n;
}

std::vector<endpoint_figures> endpoint_pool::figures() const {
  const auto now = clock::now();
  std::vector<endpoint_figures> out;
  std::lock_guard lock(mutex_);
  for (const auto& m : members_) {
    endpoint_figures f{m.spec.name, m.spec.max_concurrency, m.calls, m.in_flight, m.rate_limited, std::nullopt};
    if (m.paused_until > now) f.paused_until = m.paused_until;
    out.push_back(std::move(f));
  }
  return out;
}

std::size_t endpoint_pool::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::unique_ptr<llm_call> endpoint_pool::stream(const llm_stream& request, llm_callbacks callbacks) {
  auto call = std::make_shared<pending>();
  call->request = request;
  call->callbacks = std::move(callbacks);
  std::vector<launch> launches;
  std::optional<std::string> full;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock::now();
    // Calls wait only while no member can take one, so a waiting queue means
    // every member is full or paused.
    if (queue_.size() >= options_.max_queued && (!queue_.empty() || !pick_member(now, false))) {
      full = std::to_string(queue_.size()) + " model calls are waiting for one of " + std::to_string(members_.size()) +
             " endpoints already";
    } else {
      live_.insert(call);
      queue_.push_back(call);
      launches = take_launches(now);
    }
  }
  if (full) {
    if (call->callbacks.on_result)
      call->callbacks.on_result(llm_result{request.call_id, error_info::of(error_type::queue_full, *full)});
    return nullptr;
  }
  start(std::move(launches));
  std::lock_guard lock(mutex_);
  if (call->at == pending::phase::done) return nullptr;
  return std::make_unique<pool_call>(*this, call);
}

std::optional<std::size_t> endpoint_pool::pick_member(clock::time_point now, bool advance) {
  std::optional<std::size_t> best;
  std::size_t best_free = 0;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const std::size_t k = (next_member_ + i) % members_.size();
    const member_state& m = members_[k];
    if (m.paused_until > now || m.in_flight >= m.spec.max_concurrency) continue;
    const std::size_t free = m.spec.max_concurrency - m.in_flight;
    if (free > best_free) {
      best = k;
      best_free = free;
    }
  }
  if (best && advance) next_member_ = (*best + 1) % members_.size();
  return best;
}

std::vector<endpoint_pool::launch> endpoint_pool::take_launches(clock::time_point now) {
  std::vector<launch> out;
  if (closing_) return out;
  while (!queue_.empty()) {
    const auto m = pick_member(now, true);
    if (!m) break;
    std::shared_ptr<pending> call = std::move(queue_.front());
    queue_.pop_front();
    ++members_[*m].in_flight;
    ++members_[*m].calls;
    call->at = pending::phase::starting;
    call->member = *m;
    const std::uint64_t attempt = ++call->attempt;
    out.push_back(launch{std::move(call), *m, attempt});
  }
  return out;
}

void endpoint_pool::start(std::vector<launch> launches) {
  // A member that answers inside stream() frees its slot there, which starts
  // the next waiting call: done in this loop rather than deeper on the stack,
  // so that a long queue cannot overflow it.
  thread_local std::vector<launch>* in_progress = nullptr;
  thread_local const endpoint_pool* in_progress_pool = nullptr;
  if (in_progress && in_progress_pool == this) {
    for (auto& l : launches) in_progress->push_back(std::move(l));
    return;
  }
  struct scope {
    std::vector<launch>* outer = in_progress;
    const endpoint_pool* outer_pool = in_progress_pool;
    ~scope() {
      in_progress = outer;
      in_progress_pool = outer_pool;
    }
  } restore;
  in_progress = &launches;
  in_progress_pool = this;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const launch l = launches[i];
    llm_callbacks cb;
    cb.on_delta = [call = l.call](llm_delta d) {
      std::lock_guard lock(call->deliver);
      if (call->closed) return;
      call->streamed.store(true);
      if (call->callbacks.on_delta) call->callbacks.on_delta(std::move(d));
    };
    cb.on_result = [this, call = l.call, attempt = l.attempt](llm_result r) {
      on_attempt_result(call, attempt, std::move(r));
    };
    std::unique_ptr<llm_call> handle;
    if (auto what = thrown_by([&] { handle = members_[l.member].spec.provider->stream(l.call->request, cb); }))
      on_attempt_result(l.call, l.attempt,
                        llm_result{l.call->request.call_id, error_info::of(error_type::provider_failed,
                                                                           "the endpoint's provider threw: " + *what)});
    std::unique_lock lock(mutex_);
    if (l.call->attempt != l.attempt) continue;  // it ended inside stream() and was sent again
    if (l.call->at == pending::phase::starting) {
      l.call->at = pending::phase::running;
      l.call->handle = std::move(handle);
    } else if (l.call->at == pending::phase::cancelling) {
      // Cancelled while starting: the slot is freed once the member's call is stopped.
      lock.unlock();
      if (handle) handle->cancel();
      lock.lock();
      l.call->at = pending::phase::done;
      free_slot(l.member, launches);
    }
  }
}

void endpoint_pool::free_slot(std::size_t member, std::vector<launch>& launches) {
  --members_[member].in_flight;
  for (auto& l : take_launches(clock::now())) launches.push_back(std::move(l));
}

void endpoint_pool::on_attempt_result(const std::shared_ptr<pending>& call, std::uint64_t attempt, llm_result result) {
  std::vector<launch> launches;
  std::unique_ptr<llm_call> done_handle;
  bool finished = false;
  {
    std::lock_guard lock(mutex_);
    if (call->attempt != attempt || (call->at != pending::phase::starting && call->at != pending::phase::running))
      return;  // cancelled, or an attempt already replaced
    done_handle = std::move(call->handle);
    const auto now = clock::now();
    member_state& m = members_[call->member];
    --m.in_flight;
    auto* e = std::get_if<error_info>(&result.outcome);
    const bool rate_limited = e && e->type == "rate_limited";
    if (rate_limited) {
      ++m.rate_limited;
      ++m.consecutive_rate_limits;
      // Without a Retry-After, at least half the backoff step: a pause of
      // nothing would send the next call straight back into the limit.
      const auto pause = retry_delay(m.consecutive_rate_limits + 1, options_.retry, e->retry_after_seconds,
                                     0.5 + 0.5 * retry_jitter());
      if (now + pause > m.paused_until) {
        m.paused_until = now + pause;
        resume_at(m.paused_until, now);
      }
    } else if (!e) {
      m.consecutive_rate_limits = 0;
    }
    bool retried = false;
    if (e && is_retryable(e->type) && !call->streamed.load()) {
      if (rate_limited && call->rate_limit_retries < options_.max_rate_limit_retries) {
        ++call->rate_limit_retries;
        call->at = pending::phase::queued;
        queue_.push_front(call);  // it waited longest
        retried = true;
      } else if (!rate_limited && call->other_retries < options_.retry.max_retries) {
        ++call->other_retries;
        call->at = pending::phase::backing_off;
        requeue_after(call,
                      retry_delay(call->other_retries + 1, options_.retry, e->retry_after_seconds, retry_jitter()));
        retried = true;
      }
    }
    if (retried) {
      ++retries_;
    } else {
      if (e) e->attempts = static_cast<int>(call->attempt);
      call->at = pending::phase::done;
      live_.erase(call);
      finished = true;
    }
    launches = take_launches(now);
  }
  done_handle.reset();
  start(std::move(launches));
  if (!finished) return;
  {
    std::lock_guard lock(call->deliver);
    if (call->closed) return;
    call->closed = true;
  }
  if (call->callbacks.on_result) call->callbacks.on_result(std::move(result));
}

void endpoint_pool::requeue_after(const std::shared_ptr<pending>& call, clock::duration delay) {
  const std::uint64_t attempt = call->attempt;
  call->timer = timers_.schedule(delay, [this, call, attempt] {
    std::vector<launch> launches;
    {
      std::lock_guard lock(mutex_);
      if (call->attempt != attempt || call->at != pending::phase::backing_off) return;
      call->at = pending::phase::queued;
      queue_.push_front(call);
      launches = take_launches(clock::now());
    }
    start(std::move(launches));
  });
}

void endpoint_pool::resume_at(clock::time_point when, clock::time_point now) {
  timers_.schedule(when - now, [this] {
    std::vector<launch> launches;
    {
      std::lock_guard lock(mutex_);
      launches = take_launches(clock::now());
    }
    start(std::move(launches));
  });
}

void endpoint_pool::cancel(const std::shared_ptr<pending>& call) {
  {
    std::lock_guard lock(call->deliver);
    call->closed = true;
  }
  std::unique_ptr<llm_call> handle;
  std::size_t member = 0;
  bool was_running = false;
  {
    std::lock_guard lock(mutex_);
    switch (call->at) {
      case pending::phase::queued:
        queue_.erase(std::find(queue_.begin(), queue_.end(), call));
        call->at = pending::phase::done;
        break;
      case pending::phase::backing_off:
        timers_.cancel(call->timer);
        call->at = pending::phase::done;
        break;
      case pending::phase::starting:
        call->at = pending::phase::cancelling;  // start() stops it and frees the slot
        break;
      case pending::phase::running:
        call->at = pending::phase::cancelling;
        handle = std::move(call->handle);
        member = call->member;
        was_running = true;
        break;
      case pending::phase::cancelling:
      case pending::phase::done:
        return;
    }
    live_.erase(call);
  }
  if (!was_running) return;
  // The slot is freed once the member's call has stopped, so that a member
  // never has more than its cap of calls going.
  if (handle) handle->cancel();
  std::vector<launch> launches;
  {
    std::lock_guard lock(mutex_);
    call->at = pending::phase::done;
    free_slot(member, launches);
  }
  start(std::move(launches));
}

std::vector<pool_member> http_pool_members(const std::vector<http_endpoint>& endpoints, const http_settings& settings,
                                           std::shared_ptr<http_client> client) {
  http_settings own = settings;
  own.retries = 0;  // the pool retries, on another endpoint when one is rate limited
  std::vector<pool_member> members;
  for (const auto& e : endpoints)
    members.push_back(pool_member{
        e.base_url, std::make_shared<http_llm_provider>(http_options_for(e.base_url, e.api_key, own), client),
        e.max_concurrency});
  return members;
}

}  // namespace troupe
