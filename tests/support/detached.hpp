#pragma once
// For tests of calls that could hang: the call runs on a detached thread
// of its own, so that a call that never returns fails the test through a
// bounded wait instead of hanging it. Whatever the call uses must be owned
// by the callable (a shared_ptr), since the thread may outlive the test.

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>

namespace troupe::testing {

template <class F>
auto on_detached_thread(F f) -> std::future<decltype(f())> {
  using result = decltype(f());
  auto done = std::make_shared<std::promise<result>>();
  std::future<result> out = done->get_future();
  std::thread([f = std::move(f), done]() mutable {
    try {
      if constexpr (std::is_void_v<result>) {
        f();
        done->set_value();
      } else {
        done->set_value(f());
      }
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  return out;
}

// A bound on a wait that only a hang exceeds.
template <class T>
bool finishes(std::future<T>& f) {
  return f.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
}

}  // namespace troupe::testing
