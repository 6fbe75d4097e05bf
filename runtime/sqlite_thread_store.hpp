#pragma once
// Threads in a SQLite file: the embedded default. WAL journal, a busy
// timeout, a versioned schema migrated when the file is opened. A commit
// writes only the entries the stored thread does not have yet, in one
// immediate transaction that first checks the expected rev: two writers can
// never interleave silently. One connection, used by one writer at a time.

#include "runtime/thread_store.hpp"

#include <memory>
#include <mutex>
#include <string>

struct sqlite3;

namespace troupe {

class sqlite_thread_store final : public thread_store {
 public:
  // Opens (creating if needed) the database at `path`; throws std::runtime_error
  // with SQLite's message when it cannot.
  explicit sqlite_thread_store(const std::string& path);
  ~sqlite_thread_store() override;

  stored<thread> load(const std::string& thread_id) override;
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t expected_rev) override;
  std::vector<std::string> list() override;
  bool remove(const std::string& thread_id) override;

  static constexpr int schema_version = 1;

 private:
  std::mutex mutex_;
  sqlite3* db_ = nullptr;
};

}  // namespace troupe
