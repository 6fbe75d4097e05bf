#pragma once
// An entry's kind in 8 bytes. Kinds are open strings, but nearly every entry
// has one of the few troupe writes itself (message, tool_call, tool_result,
// summary, note, error, checkpoint): those point at a constant, and only
// another kind takes a heap block of its own. In a small_string the kind
// took 24 bytes of every entry; the 16 saved, with 8 from the refs, bring an
// entry to 256 bytes, so a thread's first four entries fit jemalloc's
// 1,024-byte class instead of its 1,280-byte one. Reads like small_string
// (string_like.hpp).

#include "strategy/string_like.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace troupe {

namespace entry_kind {
inline constexpr std::string_view message = "message";
inline constexpr std::string_view tool_call = "tool_call";
inline constexpr std::string_view tool_result = "tool_result";
inline constexpr std::string_view summary = "summary";
inline constexpr std::string_view note = "note";
inline constexpr std::string_view error = "error";
inline constexpr std::string_view checkpoint = "checkpoint";
}  // namespace entry_kind

class kind_name : public string_like<kind_name> {
 public:
  kind_name() noexcept = default;
  kind_name(std::string_view s) { assign(s); }                         // NOLINT: reads like the string it holds
  kind_name(const char* s) : kind_name(std::string_view(s)) {}         // NOLINT
  kind_name(const std::string& s) : kind_name(std::string_view(s)) {}  // NOLINT
  kind_name(const kind_name& o) : kind_name(o.view()) {}
  kind_name(kind_name&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  kind_name& operator=(const kind_name& o) {
    if (this != &o) *this = kind_name(o);
    return *this;
  }
  kind_name& operator=(kind_name&& o) noexcept {
    if (this != &o) {
      release();
      bits_ = std::exchange(o.bits_, 0);
    }
    return *this;
  }
  ~kind_name() { release(); }

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
  // The kinds troupe writes (entry_kind's constants), in one array whose
  // elements are 8-byte aligned: a pointer to one has its low bit clear.
  static constexpr std::array<std::string_view, 7> known_ = {
      entry_kind::message, entry_kind::tool_call, entry_kind::tool_result, entry_kind::summary,
      entry_kind::note,    entry_kind::error,     entry_kind::checkpoint};
  static constexpr std::uintptr_t owned_tag = 1;  // a heap block: its length, then its characters

  bool owned() const noexcept { return (bits_ & owned_tag) != 0; }

  void assign(std::string_view s) {
    if (s.empty()) return;
    for (const std::string_view& k : known_)
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

static_assert(sizeof(kind_name) == 8);
static_assert(std::is_nothrow_move_constructible_v<kind_name>);

}  // namespace troupe
