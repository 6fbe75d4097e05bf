#pragma once
// What every fuzz target shares: the libFuzzer entry point, the bytes as
// text, and a check that stops the run (libFuzzer then keeps the input as a
// crash file; the replay driver fails its test).

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

}  // namespace troupe::fuzz
