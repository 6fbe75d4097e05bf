#pragma once
// Gives back the storage a container keeps once it is empty: a vector keeps
// its capacity and an unordered_map its bucket array after their last
// element goes. An agent between turns holds nothing it used during the
// turn, and with a million agents those few hundred bytes each (a tool
// batch's vector, a request table's buckets) were a tenth of what an idle
// agent costs. The next turn allocates them again: one allocation against a
// turn's hundred and more.

namespace troupe {

template <class Container>
void release_if_empty(Container& c) {
  if (c.empty()) Container().swap(c);
}

}  // namespace troupe
