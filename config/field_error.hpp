#pragma once
// A field of an input file that cannot be used. what() reads
// "KEY: REASON (FILE:LINE)", the key dotted from the top of the file
// (population[1].count), so the user finds the line to fix.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace troupe {

struct field_error : std::runtime_error {
  // `key` empty: the file as a whole (a syntax error); `line` 0: no line.
  field_error(std::string file, std::string key, std::int64_t line, std::string reason);

  std::string file;
  std::string key;
  std::int64_t line = 0;
  std::string reason;
};

}  // namespace troupe
