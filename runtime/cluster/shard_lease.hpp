#pragma once
// A node's hold on one shard: granted with a fencing epoch that grows by one
// at every grant, so that two grants of a shard never share one. Thread
// leases taken under it record it (postgres_store::acquire_lease_in_shard),
// and a newer grant revokes them, in the statement that makes it.

#include <cstdint>
#include <string>

namespace troupe {

struct shard_lease {
  std::uint32_t shard = 0;
  std::string node_id;
  std::uint64_t epoch = 0;
  bool operator==(const shard_lease&) const = default;
};

}  // namespace troupe
