#pragma once
// The population's ids and their indices (index i is ids[i]), and the index
// of an id: a flat hash index answers `find` in about two memory reads for
// 8 to 16 bytes an agent beyond the ids themselves (a node-based hash map of
// a million strings would cost some 60 bytes an agent more, a binary search
// twenty cache misses a lookup).

#include "world/flat_index.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

class agent_directory {
 public:
  agent_directory() = default;
  // Throws std::invalid_argument on a duplicate id, or on more agents than
  // an index holds (the last index is the operator's).
  explicit agent_directory(std::vector<std::string> ids);

  std::uint32_t size() const { return static_cast<std::uint32_t>(ids_.size()); }
  const std::string& id(std::uint32_t index) const { return ids_[index]; }
  std::optional<std::uint32_t> find(std::string_view id) const;
  // Bytes held: the ids and the index (the allocator's rounding aside).
  std::size_t memory_bytes() const;

 private:
  std::vector<std::string> ids_;
  flat_index index_;
};

}  // namespace troupe
