#include "runtime/memory_thread_store.hpp"

#include <algorithm>
#include <functional>

namespace troupe {

void throw_exception_from_error(const store_error& e, const boost::source_location&) {
  throw std::runtime_error("thread store: " + e.type + ": " + e.message);
}

memory_thread_store::shard& memory_thread_store::shard_of(const std::string& thread_id) {
  return shards_[std::hash<std::string>{}(thread_id) % shards_.size()];
}

stored<thread> memory_thread_store::load(const std::string& thread_id) {
  shard& s = shard_of(thread_id);
  std::lock_guard lock(s.mutex);
  auto it = s.threads.find(thread_id);
  if (it == s.threads.end()) return store_error{"not_found", "no thread " + thread_id};
  return thread(it->second);
}

stored<std::uint64_t> memory_thread_store::append(const thread_view& t, std::uint64_t expected_rev) {
  shard& s = shard_of(t.id());
  std::lock_guard lock(s.mutex);
  auto it = s.threads.find(t.id());
  const std::uint64_t stored_rev = it == s.threads.end() ? 0 : it->second.rev();
  if (stored_rev != expected_rev)
    return store_error{"conflict", "thread " + t.id() + " is at rev " + std::to_string(stored_rev) +
                                       ", not " + std::to_string(expected_rev)};
  if (it == s.threads.end()) s.threads.emplace(t.id(), t);
  else it->second = t;
  return t.rev();
}

std::vector<std::string> memory_thread_store::list() {
  std::vector<std::string> out;
  for (shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (const auto& [id, _] : s.threads) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool memory_thread_store::remove(const std::string& thread_id) {
  shard& s = shard_of(thread_id);
  std::lock_guard lock(s.mutex);
  return s.threads.erase(thread_id) > 0;
}

}  // namespace troupe
