#pragma once
// An immutable string in 24 bytes that keeps up to 23 characters in place.
// Entries hold many short strings (ids such as "entry_5f0c2a9e41d7b3c8",
// kinds, roles, tool names): std::string keeps only 15 characters in its 32
// bytes, so each of those ids cost a heap block of its own. Longer text
// (message content) takes one exact-size block. Converts to std::string_view
// for reading and to std::string for code written against one.

#include "thread/string_like.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace troupe {

class small_string : public string_like<small_string> {
 public:
  static constexpr std::size_t inline_capacity = 23;

  small_string() noexcept { std::memset(bytes_, 0, sizeof bytes_); }
  small_string(std::string_view s) { assign(s); }                            // NOLINT: reads like the string it holds
  small_string(const char* s) : small_string(std::string_view(s)) {}         // NOLINT
  small_string(const std::string& s) : small_string(std::string_view(s)) {}  // NOLINT
  small_string(const small_string& o) : small_string(o.view()) {}
  small_string(small_string&& o) noexcept {
    std::memcpy(bytes_, o.bytes_, sizeof bytes_);
    std::memset(o.bytes_, 0, sizeof o.bytes_);
  }
  small_string& operator=(const small_string& o) {
    if (this != &o) *this = small_string(o);
    return *this;
  }
  small_string& operator=(small_string&& o) noexcept {
    if (this != &o) {
      release();
      std::memcpy(bytes_, o.bytes_, sizeof bytes_);
      std::memset(o.bytes_, 0, sizeof o.bytes_);
    }
    return *this;
  }
  ~small_string() { release(); }

  std::size_t size() const noexcept {
    if (!on_heap()) return tag();
    std::size_t n;
    std::memcpy(&n, bytes_ + sizeof(char*), sizeof n);
    return n;
  }
  bool empty() const noexcept { return size() == 0; }
  void clear() noexcept {
    release();
    std::memset(bytes_, 0, sizeof bytes_);
  }
  const char* data() const noexcept {
    if (!on_heap()) return reinterpret_cast<const char*>(bytes_);
    const char* p;
    std::memcpy(&p, bytes_, sizeof p);
    return p;
  }
  std::string_view view() const noexcept { return {data(), size()}; }

 private:
  static constexpr unsigned char heap_tag = 0xff;

  unsigned char tag() const noexcept { return bytes_[inline_capacity]; }
  bool on_heap() const noexcept { return tag() == heap_tag; }

  void assign(std::string_view s) {
    std::memset(bytes_, 0, sizeof bytes_);
    if (s.size() <= inline_capacity) {
      if (!s.empty()) std::memcpy(bytes_, s.data(), s.size());
      bytes_[inline_capacity] = static_cast<unsigned char>(s.size());
      return;
    }
    char* p = new char[s.size()];
    std::memcpy(p, s.data(), s.size());
    const std::size_t n = s.size();
    std::memcpy(bytes_, &p, sizeof p);
    std::memcpy(bytes_ + sizeof(char*), &n, sizeof n);
    bytes_[inline_capacity] = heap_tag;
  }

  void release() noexcept {
    if (on_heap()) delete[] data();
  }

  alignas(8) unsigned char bytes_[inline_capacity + 1];
};

static_assert(sizeof(small_string) == 24);
static_assert(std::is_nothrow_move_constructible_v<small_string>);

}  // namespace troupe
