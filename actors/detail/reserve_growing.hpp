#pragma once
// Makes room in a hash table for `n` elements, growing it at least twofold
// and never shrinking it. std::unordered_map::reserve(n) rehashes to the
// bucket count n needs, whatever the table has: reserving "size + batch"
// before each of a large spawn's batches rehashed every agent already there,
// once per batch: a million agents in batches of 10,000 took 7.2 s to spawn
// against 0.41 s for 100,000 (4.6 s with this).

#include <algorithm>
#include <cstddef>

namespace troupe {

template <class Table>
void reserve_growing(Table& table, std::size_t n) {
  if (static_cast<double>(n) <= static_cast<double>(table.bucket_count()) * table.max_load_factor()) return;
  table.reserve(std::max(n, 2 * table.size()));
}

}  // namespace troupe
