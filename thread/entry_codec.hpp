#pragma once
// Entries in a compact byte form, for a store that keeps many threads in
// memory: a million agents' finished rounds held as entries take 224 bytes
// an entry before their text; in this form they take their text and a few
// bytes more. Ids of troupe's own shape ("entry_" or "call_" and 16 hex
// digits) take 8 bytes, times the difference from the entry before, the
// correlation ids nothing when they repeat the entry before's, seq and the
// token estimate nothing (the position and the text give them back).
//
// Exact: an entry read back equals the entry written (operator==), its
// payload and refs writing the same JSON. Pure (no I/O), like the thread.

#include "json/decode_error.hpp"
#include "thread/entry.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

class entry_codec {
 public:
  // Appends `e`, which follows `previous` (null for a thread's first entry).
  static void write(std::string& out, const entry& e, const entry* previous);

  // Every entry of `bytes` (entries written one after another, the first
  // with no previous), numbered from 0. Their tokens are left at 0: the
  // thread they are restored into (thread::restore) estimates them, once.
  // `expected`, when known, is how many entries the bytes hold: room for
  // them is made at once. An error names the entry it could not read.
  static decoded<std::vector<entry>> read_all(std::string_view bytes, std::size_t expected = 0);
};

}  // namespace troupe
