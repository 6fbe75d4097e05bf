#pragma once
// The load a benchmark puts on a model provider (over bench/mock_model_server
// or a pool of them): a short chat call, kept going `cap` at a time, the next
// started as one ends, as a plain load client would.

#include "runtime/llm/http_llm_provider.hpp"
#include "runtime/llm/llm_provider.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace troupe::bench {

inline llm_stream short_call() {
  llm_stream s;
  s.call_id = "call";
  s.model = "local";
  s.messages = {llm_message{"user", "What now?", {}, {}, {}}};
  return s;
}

// A benchmark counts what the server does, not what a retry hides.
inline http_settings no_retries() {
  http_settings s;
  s.retries = 0;
  return s;
}

// Counts the calls that ended, for the run to wait for the last.
struct finish_line {
  std::mutex m;
  std::condition_variable cv;
  std::size_t done = 0, failed = 0;
  void count(const llm_result& r) {
    std::lock_guard lock(m);
    ++done;
    failed += !r.ok();
    cv.notify_all();
  }
  void wait_for(std::size_t n) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done >= n; });
  }
};

// Keeps calls going on `provider` until `started` reaches `calls`: each
// next() starts one, and each call that ends starts the next.
struct closed_loop {
  llm_provider& provider;
  std::atomic<std::size_t>& started;
  std::size_t calls;
  finish_line& finish;
  void next() {
    if (started.fetch_add(1) >= calls) return;
    provider.stream(short_call(), {{}, [this](llm_result r) {
                                     finish.count(r);
                                     next();
                                   }});
  }
};

}  // namespace troupe::bench
