#pragma once
// A string in 8 bytes, for fields whose values are nearly always one of a
// few known words (an entry's kind, a message's role): a known word points
// at its constant in `Known` (a std::array of std::string_view), and only
// another value takes a heap block of its own. Reads like small_string
// (string_like.hpp).

#include "thread/string_like.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace troupe {

template <const auto& Known>
class interned_name : public string_like<interned_name<Known>> {
 public:
  interned_name() noexcept = default;
  interned_name(std::string_view s) { assign(s); }                             // NOLINT: reads like the string it holds
  interned_name(const char* s) : interned_name(std::string_view(s)) {}         // NOLINT
  interned_name(const std::string& s) : interned_name(std::string_view(s)) {}  // NOLINT
  interned_name(const interned_name& o) : interned_name(o.view()) {}
  interned_name(interned_name&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  interned_name& operator=(const interned_name& o) {
    if (this != &o) *this = interned_name(o);
    return *this;
  }
  interned_name& operator=(interned_name&& o) noexcept {
    if (this != &o) {
      release();
      bits_ = std::exchange(o.bits_, 0);
    }
    return *this;
  }
  ~interned_name() { release(); }

  std::string_view view() const noexcept {
    if (bits_ == 0) return {};
    if (!owned()) return *reinterpret_cast<const std::string_view*>(bits_);
    const char* block = reinterpret_cast<const char*>(bits_ & ~owned_tag);
    std::size_t n;
    std::memcpy(&n, block, sizeof n);
    return {block + sizeof n, n};
  }
  std::size_t size() const noexcept { return view().size(); }
  bool empty() const noexcept { return bits_ == 0; }
  const char* data() const noexcept { return view().data(); }

 private:
  // Known's elements are string_views, 8-byte aligned: a pointer to one has
  // its low bit clear.
  static_assert(alignof(std::string_view) >= 2);
  static constexpr std::uintptr_t owned_tag = 1;  // a heap block: its length, then its characters

  bool owned() const noexcept { return (bits_ & owned_tag) != 0; }

  void assign(std::string_view s) {
    if (s.empty()) return;
    for (const std::string_view& k : Known)
      if (k == s) {
        bits_ = reinterpret_cast<std::uintptr_t>(&k);
        return;
      }
    const std::size_t n = s.size();
    char* block = new char[sizeof n + n];  // new[] aligns it for any type: its low bit is clear
    std::memcpy(block, &n, sizeof n);
    std::memcpy(block + sizeof n, s.data(), n);
    bits_ = reinterpret_cast<std::uintptr_t>(block) | owned_tag;
  }

  void release() noexcept {
    if (owned()) delete[] reinterpret_cast<char*>(bits_ & ~owned_tag);
    bits_ = 0;
  }

  std::uintptr_t bits_ = 0;  // 0: empty
};

}  // namespace troupe
