#pragma once
// Runs callbacks after a delay on one background thread. Providers that wait
// (a scripted delay, a retry backoff) use it instead of sleeping on a caller's
// thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace troupe {

class timer_queue {
 public:
  using clock = std::chrono::steady_clock;

  timer_queue();
  ~timer_queue();  // pending callbacks are dropped, not run
  timer_queue(const timer_queue&) = delete;
  timer_queue& operator=(const timer_queue&) = delete;

  std::uint64_t schedule(clock::duration delay, std::function<void()> fn);
  // True if the callback had not started yet and now never will.
  bool cancel(std::uint64_t id);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<clock::time_point, std::pair<std::uint64_t, std::function<void()>>> due_;
  std::uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace troupe
