#pragma once
// Threads and conversations in PostgreSQL, for deployments that outgrow one
// file: many processes, many writers. libpq with a pool of connections;
// the schema is migrated on start (under an advisory lock, so that processes
// starting together migrate once). A commit is one round trip to a stored
// function that locks only its own thread's row, checks the expected rev and
// inserts the new entries: writers on different threads never wait for each
// other, and two writers on one thread can never interleave silently.
//
// Payloads are kept as PostgreSQL `json` (verbatim text, so entries load
// exactly as written) and can be queried with the JSON operators.
//
// The pool is in connection_pool.hpp, the schema in migrations.hpp, the
// thread part in threads.cpp and the conversation part in conversations.cpp.

#include "runtime/cluster/shard_lease.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/conversation_store.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe {

namespace postgres {
class connection_pool;
template <class Item>
class batch_queue;
struct queued_append;
struct queued_take;
struct queued_release;
}  // namespace postgres

struct postgres_options {
  std::size_t pool_size = 16;  // connections at most; opened as needed
  // A server that does not answer must not hold a store thread forever: a
  // connection not made within connect_timeout is an io error, a statement
  // that runs past statement_timeout is cancelled by the server (a
  // "timeout" store error). A conninfo that sets connect_timeout wins.
  std::chrono::seconds connect_timeout{10};
  std::chrono::milliseconds statement_timeout{30'000};
  // A row held by another transaction (a stuck session, an open psql) is
  // waited for this long: past it, the commit that needs it fails alone
  // with a "timeout", and the rest of its batch does not wait at all.
  std::chrono::milliseconds lock_timeout{2'000};
  // A server that stops answering (stopped, partitioned away) cancels
  // nothing: each call gives up waiting this long after statement_timeout,
  // fails with a "timeout", and drops its connection. A call that goes
  // through the commit or lease queues may wait for its turn there too
  // (set_queue_deadline), and for a new connection (connect_timeout).
  std::chrono::milliseconds answer_grace{2'000};
  // Commits from agents (append_queued), and lease takes at load
  // (acquire_lease_queued), sent in one call at most.
  std::size_t max_batch = 1000;
  // Batches of commits written at once, each on a connection of the pool
  // (batch_queue.hpp); lease takes go one batch at a time.
  std::size_t append_writers = 4;
};

class postgres_store final : public thread_store, public conversation_store {
 public:
  using options = postgres_options;
  // `conninfo` is anything libpq accepts: postgres://user@host:port/db?…,
  // postgresql://…, or "host=… dbname=…". Connects and migrates; throws
  // std::runtime_error with the server's message when it cannot.
  explicit postgres_store(const std::string& conninfo, options o = {});
  ~postgres_store() override;

  stored<thread> load(const std::string& thread_id) override;
  // By the index on (thread_id, refs->>'request_id', seq).
  stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id) override;
  // By the index of approval requests, each checked for a decision or a
  // result by entries_by_request.
  stored<std::vector<open_pause>> open_pauses(const std::string& agent_id) override;
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                      const thread_lease& fence) override;
  // Commits from agents queue for the writer thread's next batch.
  commit_path path() const override { return commit_path::queued; }
  std::optional<commit_batching> batching() const override;
  void append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence, append_done done) override;
  void set_queue_deadline(std::chrono::milliseconds deadline) override;
  stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override;
  // Lease takes from agents' loads queue for one call per batch too.
  bool queues_lease_takes() const override { return true; }
  void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override;
  void release_lease(const std::string& thread_id, const thread_lease& held) override;
  // And so do lease releases from agents that stop.
  void release_lease_queued(const std::string& thread_id, const thread_lease& held,
                            std::function<void()> done) override;
  std::vector<std::string> list() override;
  bool remove(const std::string& thread_id) override;

  // acquire_lease() for the node of a cluster that holds the thread's shard
  // (docs/cluster.md): "fenced" unless `shard` is the shard's current grant
  // and live by the database's clock (the shard stays locked until the
  // take commits, so it cannot change hands in between); "owned" while
  // another owner's live lease was taken under this same grant; otherwise
  // taken with the next epoch, even from a live holder that took it under
  // an older grant, whose commits are refused as "fenced" from then on.
  // The lease records the grant, so that the shard's next grant revokes it.
  stored<thread_lease> acquire_lease_in_shard(const std::string& thread_id, const std::string& owner,
                                              const shard_lease& shard, std::int64_t now_ms,
                                              std::chrono::milliseconds ttl);

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

  static constexpr int schema_version = 11;

 private:
  stored<std::uint64_t> append_as(const thread_view& t, std::uint64_t expected_rev, const thread_lease* fence);
  // Writes a batch of queued commits in one call; returns its transactions.
  std::size_t append_batch(std::vector<postgres::queued_append>& batch);
  // Takes a batch of queued leases in one call; returns its transactions.
  std::size_t take_lease_batch(std::vector<postgres::queued_take>& batch);
  // Gives a batch of leases up in one statement; returns its transactions.
  std::size_t release_lease_batch(std::vector<postgres::queued_release>& batch);

  std::unique_ptr<postgres::connection_pool> pool_;
  // Made after pool_, gone before it.
  std::unique_ptr<postgres::batch_queue<postgres::queued_append>> queue_;
  std::unique_ptr<postgres::batch_queue<postgres::queued_take>> leases_;
  std::unique_ptr<postgres::batch_queue<postgres::queued_release>> releases_;

  std::mutex ids_mutex_;
  random_ids ids_;
};

// True for the URIs this store takes (postgres:// and postgresql://).
bool is_postgres_uri(const std::string& uri);

}  // namespace troupe
