#pragma once
// The latency quantiles a run reports, one definition for the load generator
// and the scenario runner so that their p50 and p99 mean the same thing.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace troupe {

// The q-quantile of `xs` (q in [0, 1]): the value at rank floor(q * (n - 1))
// of the sorted values, 0 for none. Reorders `xs` (a partial sort: O(n)).
inline double percentile(std::vector<double>& xs, double q) {
  if (xs.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(xs.size() - 1));
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(k), xs.end());
  return xs[k];
}

}  // namespace troupe
