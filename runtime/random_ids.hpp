#pragma once
// Random ids for the runtime ("call_5f0c2a9e41d7b3c8"). A seeded agent owns
// one source (its run repeats to the byte); the others draw from their
// scheduler thread's. The state is 32 bytes (xoshiro256**).

#include "thread/id_source.hpp"

#include <array>
#include <cstdint>

namespace troupe {

class random_ids final : public id_source {
 public:
  // Seeds from std::random_device mixed with a process-wide counter, so two
  // sources never share a sequence.
  random_ids();
  explicit random_ids(std::uint64_t seed);
  std::string next(std::string_view kind) override;
  // 64 random bits, for ids that are numbers (trace and span ids).
  std::uint64_t next_u64();

 private:
  std::array<std::uint64_t, 4> s_;
};

}  // namespace troupe
