#pragma once
// Runs callbacks after a delay on one background thread. Providers that wait
// (a scripted delay, a retry backoff) use it instead of sleeping on a caller's
// thread. A callback that throws ends neither the thread (which would end the
// process) nor the callbacks after it: what it threw goes to its on_throw, so
// that whoever scheduled it can fail the work it stood for.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace troupe {

class timer_queue {
 public:
  using clock = std::chrono::steady_clock;

  timer_queue();
  ~timer_queue();  // pending callbacks are dropped, not run
  timer_queue(const timer_queue&) = delete;
  timer_queue& operator=(const timer_queue&) = delete;

  using thrown_handler = std::function<void(const std::string& what)>;

  std::uint64_t schedule(clock::duration delay, std::function<void()> fn, thrown_handler on_throw = {});
  // True if the callback had not started yet and now never will.
  bool cancel(std::uint64_t id);
  // Callbacks (and on_throw handlers) that threw, since the queue started.
  std::uint64_t callbacks_thrown() const { return thrown_.load(std::memory_order_relaxed); }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  struct timer {
    std::uint64_t id;
    std::function<void()> fn;
    thrown_handler on_throw;
  };
  std::multimap<clock::time_point, timer> due_;
  std::atomic<std::uint64_t> thrown_{0};
  std::uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace troupe
