#pragma once
// A thread store in memory. A commit keeps an O(1) snapshot of the writer's
// thread, so it costs a map lookup and a few shared pointers, whatever the
// thread's length.

#include "runtime/thread_store.hpp"

#include <array>
#include <mutex>
#include <unordered_map>

namespace troupe {

class memory_thread_store final : public thread_store {
 public:
  stored<thread> load(const std::string& thread_id) override;
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  std::vector<std::string> list() override;
  bool remove(const std::string& thread_id) override;

 private:
  // Sharded so that many agents committing at once rarely share a lock.
  struct shard {
    std::mutex mutex;
    std::unordered_map<std::string, thread_view> threads;
  };
  shard& shard_of(const std::string& thread_id);
  std::array<shard, 16> shards_;
};

}  // namespace troupe
