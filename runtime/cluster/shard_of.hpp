#pragma once
// Which shard an agent lives in. The hash is 64-bit FNV-1a over the agent
// id's bytes (offset basis 14695981039346656037, prime 1099511628211),
// reduced modulo the cluster's shard count. It is written out here rather
// than taken from std::hash, whose values may differ between standard
// libraries and builds: every node of a cluster, whatever its build, must
// place an agent in the same shard, and a cluster's placement must survive
// an upgrade. Do not change it: a cluster would then look for its agents'
// threads under shards that never held them.

#include <cstdint>
#include <string_view>

namespace troupe {

std::uint64_t fnv1a_64(std::string_view bytes);

// `shards` must be positive (cluster_options::validate checks it).
std::uint32_t shard_of(std::string_view agent_id, std::uint32_t shards);

}  // namespace troupe
