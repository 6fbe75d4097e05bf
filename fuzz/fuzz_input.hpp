#pragma once
// What every fuzz target shares: the libFuzzer entry point, the bytes as
// text, and a check that stops the run (libFuzzer then keeps the input as a
// crash file; the replay driver fails its test).

#include "json/utf8.hpp"
#include "signals/signal.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace troupe::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An invariant the code under test promises; a sanitizer finds the rest.
inline void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

// The input fed whole and then in pieces of `piece` bytes, the same way a
// network read would cut it: 1 to 8 bytes, chosen by the input's first byte.
inline std::size_t piece_size(std::string_view input) {
  return input.empty() ? 1 : static_cast<unsigned char>(input.front()) % 8 + 1;
}

// Every text troupe takes in is valid UTF-8 from then on (json/utf8.hpp):
// what a decoder hands on must need no mending.
inline void require_valid_text(troupe::signal s, const char* what) { require(!troupe::repair_utf8(s), what); }
inline void require_valid_text(std::string_view text, const char* what) { require(troupe::is_valid_utf8(text), what); }

}  // namespace troupe::fuzz
