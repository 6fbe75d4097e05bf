#pragma once
// Threads and conversations in memory. A commit keeps an O(1) snapshot of
// the writer's thread, so it costs a map lookup and a few shared pointers,
// whatever the thread's length.
//
// In the compact form (memory_form::compact) a commit instead writes the new
// entries in entry_codec's form, and a load reads the thread back from it:
// for many threads that their owners unload once idle (a simulation's
// agents), which then take their text and a few bytes an entry instead of
// 224 bytes an entry and their text. A commit costs its new entries, a load
// the whole thread.

#include "runtime/random_ids.hpp"
#include "runtime/store/conversation_store.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace troupe {

enum class memory_form : std::uint8_t {
  entries,  // the writer's entries, shared
  compact,  // entry_codec's bytes
};

class memory_store final : public thread_store, public conversation_store {
 public:
  explicit memory_store(memory_form form = memory_form::entries) : form_(form) {}

  stored<thread> load(const std::string& thread_id) override;
  stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id) override;
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  commit_path path() const override { return commit_path::immediate; }
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                      const thread_lease& fence) override;
  stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override;
  void release_lease(const std::string& thread_id, const thread_lease& held) override;
  std::vector<std::string> list() override;
  bool remove(const std::string& thread_id) override;

  stored<conversation> get_or_create_conversation(const conversation_key& key) override;
  stored<conversation> find_conversation(const std::string& conversation_id) override;
  stored<std::vector<entry>> history(const std::string& conversation_id, std::size_t limit) override;
  stored<conversation_trace> trace(const std::string& conversation_id) override;
  stored<std::vector<conversation>> list_conversations(const std::string& user_id, std::size_t limit,
                                                       std::size_t offset) override;
  stored<conversation> archive_conversation(const std::string& conversation_id) override;
  stored<conversation> set_conversation_metadata(const std::string& conversation_id,
                                                 const boost::json::object& metadata) override;
  stored<conversation> claim_conversation_metadata(const std::string& conversation_id, const std::string& key,
                                                   const boost::json::value& value) override;
  stored<void> delete_conversation(const std::string& conversation_id) override;

 private:
  // A stored thread, found by its id. A set keyed by the view's own id, not
  // a map from a copy of it: one copy of the id less per thread (a memory
  // store holds every agent's thread), and a hash node a jemalloc class
  // smaller. A commit replaces the view, never its id, so the key stays.
  struct stored_view {
    mutable thread_view view;
  };
  // A stored thread in the compact form: what a thread_view holds besides
  // its entries, and the entries' bytes.
  // A commit changes everything but the id, which is the set's key.
  struct stored_compact {
    std::string id;
    mutable std::uint64_t rev = 0;
    mutable std::int64_t created_at = 0;
    mutable std::int64_t updated_at = 0;
    mutable std::uint64_t size = 0;
    mutable std::shared_ptr<const boost::json::object> metadata;  // null when empty
    mutable std::string bytes;
  };
  struct by_id {
    using is_transparent = void;
    static std::string_view id(const stored_view& s) { return s.view.id(); }
    static std::string_view id(const stored_compact& s) { return s.id; }
    static std::string_view id(std::string_view s) { return s; }  // a lookup by id, without a stored_view made for it
    std::size_t operator()(const auto& x) const { return std::hash<std::string_view>{}(id(x)); }
    bool operator()(const auto& a, const auto& b) const { return id(a) == id(b); }
  };
  // Sharded so that many agents committing at once rarely share a lock.
  struct shard {
    std::mutex mutex;
    std::unordered_set<stored_view, by_id, by_id> threads;
    std::unordered_set<stored_compact, by_id, by_id> compact;
  };
  stored<thread> expand(const stored_compact& c) const;
  static void write_new_entries(const stored_compact& c, const thread_view& t);
  shard& shard_of(const std::string& thread_id);
  bool erase_thread(const std::string& thread_id);
  std::array<shard, 16> shards_;
  memory_form form_;

  // Conversations are few next to commits: one lock. Never held together
  // with a shard's.
  std::mutex conversations_mutex_;
  std::map<std::string, conversation> conversations_;                    // by id
  std::unordered_map<std::string, std::string> conversation_of_thread_;  // thread id → conversation id
  // The order conversations were opened in: what orders two whose last
  // messages share a millisecond (the SQL stores use a column for it).
  std::unordered_map<std::string, std::uint64_t> opened_order_;
  std::uint64_t opened_ = 0;
  std::atomic<bool> has_conversations_{false};

  // Leases (for owners in this process only: the store is its memory). Taken
  // before a shard's lock, never after.
  std::mutex leases_mutex_;
  std::unordered_map<std::string, thread_lease> leases_;
  random_ids ids_;
};

}  // namespace troupe
