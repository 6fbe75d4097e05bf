#pragma once
// A fixed set of threads for work that may block (tools that do I/O or wait),
// so that it never runs on the actor scheduler. The queue is bounded: submit()
// refuses work instead of growing without limit.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace troupe {

class worker_pool {
 public:
  worker_pool(std::size_t threads, std::size_t max_queued);
  ~worker_pool();  // finishes running jobs, drops queued ones
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  // False when the queue is full or the pool is stopping.
  bool submit(std::function<void()> job);
  std::size_t threads() const { return threads_.size(); }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::size_t max_queued_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace troupe
