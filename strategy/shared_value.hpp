#pragma once
// Immutable values held by a shared pointer, for the parts of a machine state
// that are large, rarely set and never edited in place (a request's
// overrides, the last error). Every idle agent holds a react_state, and every
// step copies one: a pointer instead of a few hundred bytes of optionals and
// strings keeps an idle agent small and a step's copy cheap. Both compare by
// value, like the members they replace.

#include <memory>
#include <utility>

namespace troupe {

// A T that costs one pointer while it equals T{}.
template <class T>
class shared_value {
 public:
  shared_value() = default;
  shared_value(T v) { *this = std::move(v); }  // NOLINT: converts like the T it stands for

  shared_value& operator=(T v) {
    if (v == T{})
      value_.reset();
    else
      value_ = std::make_shared<const T>(std::move(v));
    return *this;
  }

  const T& get() const { return value_ ? *value_ : empty(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }

  friend bool operator==(const shared_value& a, const shared_value& b) { return a.get() == b.get(); }

 private:
  static const T& empty() {
    static const T none{};
    return none;
  }
  std::shared_ptr<const T> value_;
};

// A std::optional<T> that costs one pointer.
template <class T>
class shared_optional {
 public:
  shared_optional() = default;
  shared_optional(T v) : value_(std::make_shared<const T>(std::move(v))) {}  // NOLINT

  shared_optional& operator=(T v) {
    value_ = std::make_shared<const T>(std::move(v));
    return *this;
  }
  void reset() { value_.reset(); }

  bool has_value() const { return static_cast<bool>(value_); }
  explicit operator bool() const { return has_value(); }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return value_.get(); }

  friend bool operator==(const shared_optional& a, const shared_optional& b) {
    return a.has_value() == b.has_value() && (!a || *a == *b);
  }
  friend bool operator==(const shared_optional& a, const T& b) { return a && *a == b; }

 private:
  std::shared_ptr<const T> value_;
};

}  // namespace troupe
