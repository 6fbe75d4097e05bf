#include "runtime/cluster/shard_of.hpp"

namespace troupe {

std::uint64_t fnv1a_64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::uint32_t shard_of(std::string_view agent_id, std::uint32_t shards) {
  return static_cast<std::uint32_t>(fnv1a_64(agent_id) % shards);
}

}  // namespace troupe
