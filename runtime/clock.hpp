#pragma once
// The runtime's clocks: wall time for entries, steady time for durations.

#include <chrono>
#include <cstdint>

namespace troupe {

inline std::int64_t wall_clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// For spans, whose times are Unix nanoseconds.
inline std::int64_t wall_clock_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

inline std::int64_t steady_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace troupe
