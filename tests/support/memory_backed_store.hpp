#pragma once
// A thread store for tests that change one or two of a store's calls (to
// block, to queue, to count) and keep threads in a memory store for the rest.

#include "runtime/store/memory_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::testing {

class memory_backed_store : public thread_store {
 public:
  stored<thread> load(const std::string& id) override { return inner.load(id); }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override {
    return inner.append(t, expected_rev);
  }
  std::vector<std::string> list() override { return inner.list(); }
  bool remove(const std::string& id) override { return inner.remove(id); }

  memory_store inner;
};

}  // namespace troupe::testing
