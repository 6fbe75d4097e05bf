#pragma once
// What the project's compact strings (small_string, kind_name) share: each
// says where its characters are (view()); this gives them the conversions and
// comparisons of a string, written once. Comparisons take any string-like
// right side through one template, so that comparing with a literal, a
// std::string or another compact string is never ambiguous.

#include <compare>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace troupe {

template <class Derived>
class string_like {
 public:
  std::string str() const { return std::string(self().view()); }
  operator std::string_view() const noexcept { return self().view(); }  // NOLINT: reads like the string it holds
  operator std::string() const { return str(); }                        // NOLINT

  friend std::ostream& operator<<(std::ostream& os, const Derived& s) { return os << s.view(); }

  template <class T>
  requires std::is_convertible_v<const T&, std::string_view>
  friend bool operator==(const Derived& a, const T& b) { return a.view() == std::string_view(b); }
  template <class T>
  requires std::is_convertible_v<const T&, std::string_view>
  friend std::strong_ordering operator<=>(const Derived& a, const T& b) { return a.view() <=> std::string_view(b); }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace troupe
