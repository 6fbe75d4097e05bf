#pragma once
// Where threads are kept beyond an agent's lifetime. Agents load a thread
// when they first need it (and after a restart) and commit every step's
// entries before the step's directives leave.

#include "thread/thread.hpp"

#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace troupe {

struct store_error {
  // "not_found", "conflict" (a stale writer, or an id already taken),
  // "invalid" (a request that can never succeed, e.g. a fork point past the
  // end), "corrupt" (stored data troupe cannot read), "io" (disk, connection),
  // "owned" (a thread whose lease another owner holds), "fenced" (a commit
  // under a lease that is no longer the thread's: nothing was written),
  // "internal" (the store itself threw, e.g. out of memory; nothing of that
  // call was written), "timeout" (the store did not answer within its
  // deadline: a commit waited too long for a writer, a statement ran past
  // its timeout, a server took too long to connect; nothing was written,
  // unless the message says the outcome is unknown).
  std::string type;
  std::string message;
};

[[noreturn]] void throw_exception_from_error(const store_error& e, const boost::source_location&);

template <class T>
using stored = boost::system::result<T, store_error>;

// How a store's commits should be run by an owner that must not block (an
// agent on the actor scheduler): see store_executor.hpp.
enum class commit_path {
  immediate,  // in memory: answers at once, so it is called on the owner's own thread
  blocking,   // does I/O: called from a pool of store threads
  queued,     // does I/O and batches: commits go to append_queued() and never block
};

using append_done = std::function<void(stored<std::uint64_t>)>;

struct thread_lease;  // thread_lease.hpp
using lease_done = std::function<void(stored<thread_lease>)>;

// A tool call that waits for a person's decision (an approval_request
// entry with neither a decision nor a result): where, and until when.
struct open_pause {
  std::string thread_id;
  std::string request_id;
  std::string tool_call_id;
  std::int64_t expires_at = 0;

  friend bool operator==(const open_pause&, const open_pause&) = default;
};

struct commit_batching {
  std::uint64_t transactions = 0;
  std::uint64_t commits = 0;
};

class thread_store {
 public:
  virtual ~thread_store() = default;

  virtual commit_path path() const { return commit_path::blocking; }
  // For stores that carry several commits in one transaction (SQLite's
  // group commit): how many of each so far. Others: nothing to say.
  virtual std::optional<commit_batching> batching() const { return std::nullopt; }

  virtual stored<thread> load(const std::string& thread_id) = 0;
  // The entries of one request of `thread_id`: those whose refs.request_id
  // is `request_id`, in seq order; none when the thread has no such entry
  // (or there is no such thread). The durable stores find them by an index,
  // so that the cost is the request's, not the thread's. The default loads
  // the thread and picks them out.
  virtual stored<std::vector<entry>> request_entries(const std::string& thread_id, const std::string& request_id);
  // The calls that wait for a decision, on every thread, that the agent
  // `agent_id` asked for (the approval_request entry's "agent"), by thread
  // and seq: what a runtime started again must expire at their deadlines,
  // though nobody loads their threads. The durable stores find them by an
  // index of approval requests. The default loads every thread.
  virtual stored<std::vector<open_pause>> open_pauses(const std::string& agent_id);
  // Commits `t`, which must extend the stored thread: its entries beyond the
  // stored ones are the new ones, and only those are written. `expected_rev`
  // is the rev the writer last saw (0 for a thread new to the store); any
  // other stored rev is a conflict and nothing is written.
  virtual stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) = 0;
  // append() by the holder of the thread's lease (thread_lease.hpp): refused
  // as "fenced" unless `fence` is the thread's current lease, which it
  // renews. The default, for stores that keep no leases, is append().
  virtual stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                              const thread_lease& fence);
  // append() (or append_fenced(), given a fence) without waiting, for
  // `queued` stores: `done` gets the outcome on a store thread, possibly
  // before this returns. The default runs it on the caller's thread.
  virtual void append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence, append_done done);
  // How long a queued commit may wait for its store before it fails with a
  // "timeout" (the owner's deadline, store_executor_options::deadline).
  // Nothing for stores that queue nothing.
  virtual void set_queue_deadline(std::chrono::milliseconds) {}

  // Takes the lease of `thread_id` for `owner` until now_ms + ttl, with a
  // new epoch; "owned" while another owner's lease is live. The default,
  // for stores that keep no leases (one process), always grants epoch 1.
  virtual stored<thread_lease> acquire_lease(const std::string& thread_id, const std::string& owner,
                                             std::int64_t now_ms, std::chrono::milliseconds ttl);
  // acquire_lease() without waiting, as append_queued() is to append(), for
  // stores that say they queue it (and queue release_lease_queued() too);
  // the default runs it on the caller's thread.
  virtual bool queues_lease_takes() const { return false; }
  virtual void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                    std::chrono::milliseconds ttl, lease_done done);
  // Gives a lease up early, so that another owner need not wait for it to
  // expire; nothing if `held` is no longer the thread's lease.
  virtual void release_lease(const std::string& thread_id, const thread_lease& held);
  // release_lease() without waiting: a store that queues lease takes gives
  // leases up in its batches too, so that agents stopping by the thousand
  // do not make a round trip or a transaction each. `done` (if any) is
  // called on a store thread once it is given up, or could not be (a lease
  // not given up expires all the same). The default runs it on the caller's
  // thread: a store that says it queues lease takes must queue this too,
  // since the runtime calls it from its scheduler threads.
  virtual void release_lease_queued(const std::string& thread_id, const thread_lease& held, std::function<void()> done);
  virtual std::vector<std::string> list() = 0;
  virtual bool remove(const std::string& thread_id) = 0;

  // A new thread `new_id` holding the entries of `thread_id` up to and
  // including seq `at_seq`, ids and times unchanged. Its metadata is the
  // parent's plus "forked_from": {"thread_id", "at_seq"}. Tool calls cut off
  // from their results by the fork point are repaired by the agent that
  // loads the fork, as after a crash. Errors: not_found (no parent),
  // invalid (at_seq past its end), conflict (new_id is taken).
  virtual stored<thread> fork(const std::string& thread_id, std::uint64_t at_seq, const std::string& new_id,
                              std::int64_t now_ms);

  // Where a store says what it mended as it read: an entry stored with bytes
  // that are not UTF-8 (troupe writes none, but a file may hold them from
  // elsewhere) loads with U+FFFD in their place instead of failing the load
  // for good, and the store says so once per thread. Unset: on standard error.
  using repair_report = std::function<void(const std::string& thread_id, const std::string& what)>;
  void set_repair_report(repair_report report);

 protected:
  void report_repair(const std::string& thread_id, const std::string& what);

 private:
  std::mutex repairs_mutex_;
  repair_report repair_report_;
  std::unordered_set<std::string> repaired_threads_;
};

}  // namespace troupe
