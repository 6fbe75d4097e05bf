#pragma once
// A response promise that is always kept: destroyed unanswered (its actor
// crashed, or dropped the work), it answers with a fallback. CAF 0.17 does
// not answer the promises of an actor that dies, and a requester must never
// wait for an actor that is gone.

#include <caf/all.hpp>

#include <string>
#include <utility>

namespace troupe {

template <class T>
class promise_guard {
 public:
  // The fallback is built only when needed, from the id it is given.
  using make_fallback = T (*)(const std::string& id);

  promise_guard() = default;
  promise_guard(caf::typed_response_promise<T> promise, std::string id, make_fallback fallback)
      : promise_(std::move(promise)), id_(std::move(id)), fallback_(fallback) {}
  promise_guard(promise_guard&& other) noexcept { *this = std::move(other); }
  promise_guard& operator=(promise_guard&& other) noexcept {
    if (this != &other) {
      settle_with_fallback();
      promise_ = std::move(other.promise_);
      id_ = std::move(other.id_);
      fallback_ = other.fallback_;
      other.promise_ = {};
    }
    return *this;
  }
  promise_guard(const promise_guard&) = delete;
  promise_guard& operator=(const promise_guard&) = delete;
  ~promise_guard() { settle_with_fallback(); }

  void deliver(T x) {
    if (promise_.pending()) promise_.deliver(std::move(x));
  }
  bool pending() const { return promise_.pending(); }

 private:
  void settle_with_fallback() {
    if (fallback_ && promise_.pending()) promise_.deliver(fallback_(id_));
  }

  caf::typed_response_promise<T> promise_;
  std::string id_;
  make_fallback fallback_ = nullptr;
};

}  // namespace troupe
