#pragma once
// Threads and conversations in a SQLite file: the embedded default. WAL
// journal, a busy timeout, a versioned schema migrated when the file is
// opened (migrations.hpp).
//
// One writer connection per store, with group commit (group_commit.hpp):
// under load, N concurrent commits cost one fsync-bound transaction instead
// of N. Reads use a pool of reader connections (reader_pool.hpp), which WAL
// lets run beside the writer.
//
// A commit writes only the entries the stored thread does not have yet,
// after checking the expected rev inside the transaction: two writers can
// never interleave silently. The thread part is in threads.cpp, the
// conversation part in conversations.cpp.

#include "runtime/random_ids.hpp"
#include "runtime/store/conversation_store.hpp"
#include "runtime/store/sqlite/group_commit.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

namespace sqlite {
class connection;
class reader_pool;
}  // namespace sqlite

struct sqlite_options {
  // false (the default): in WAL mode a commit survives a killed process but
  // is not synced to disk one by one, so a power loss can take back the last
  // commits. true: every transaction is fsynced before its commits return;
  // group commit then shares one fsync among all the commits it carries.
  bool sync_every_commit = false;
  // How long the writer retries a file another process has locked (a write
  // transaction of its own) before the commit fails with an io error.
  std::chrono::milliseconds busy_timeout{5'000};
};

class sqlite_store final : public thread_store, public conversation_store {
 public:
  // Opens (creating if needed) the database at `path`; throws
  // std::runtime_error with SQLite's message when it cannot.
  explicit sqlite_store(const std::string& path, sqlite_options options = {});
  ~sqlite_store() override;

  stored<thread> load(const std::string& thread_id) override;
  // By the index on (thread_id, refs' request_id, seq).
  stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id) override;
  // By the index of approval requests, each checked for a decision or a
  // result by entries_by_request.
  stored<std::vector<open_pause>> open_pauses(const std::string& agent_id) override;
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  // Commits from agents queue for the writer thread's next transaction.
  commit_path path() const override { return commit_path::queued; }
  std::optional<commit_batching> batching() const override;
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                      const thread_lease& fence) override;
  void append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence, append_done done) override;
  void set_queue_deadline(std::chrono::milliseconds deadline) override { commits_.set_max_wait(deadline); }
  // Leases are written by the writer, in the group commit's transactions.
  stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override;
  void release_lease(const std::string& thread_id, const thread_lease& held) override;
  // Joins the writer's next transaction, as queued commits do.
  void release_lease_queued(const std::string& thread_id, const thread_lease& held,
                            std::function<void()> done) override;
  bool queues_lease_takes() const override { return true; }
  void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override;
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

  using commit_stats = sqlite::commit_stats;
  commit_stats stats() const;

  static constexpr int schema_version = 6;

 private:
  // Runs `work` in the next group transaction; its error, or the
  // transaction's.
  std::optional<store_error> write(const sqlite::write_work& work) { return commits_.write(work); }

  std::unique_ptr<sqlite::connection> writer_;
  sqlite::group_commit commits_;
  std::unique_ptr<sqlite::reader_pool> readers_;

  std::mutex ids_mutex_;
  random_ids ids_;
};

}  // namespace troupe
