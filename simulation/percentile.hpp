#pragma once
// The latency quantiles a run reports, one definition for the load generator
// and the scenario runner so that their p50 and p99 mean the same thing.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace troupe {

// The rank of the q-quantile (q in [0, 1]) among n > 0 sorted values:
// floor(q * (n - 1)), so that the median of an odd count is its middle value
// and q = 1 is the largest.
inline std::size_t quantile_rank(std::size_t n, double q) {
  return static_cast<std::size_t>(q * static_cast<double>(n - 1));
}

// The q-quantile of `xs`: the value at quantile_rank of the sorted values, 0
// for none. Reorders `xs` (a partial sort: O(n)).
inline double percentile(std::vector<double>& xs, double q) {
  if (xs.empty()) return 0;
  const auto k = quantile_rank(xs.size(), q);
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(k), xs.end());
  return xs[k];
}

}  // namespace troupe
