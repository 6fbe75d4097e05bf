#include "runtime/store/sqlite/sqlite_store.hpp"

#include "runtime/store/sqlite/detail/connection.hpp"
#include "runtime/store/sqlite/detail/migrations.hpp"
#include "runtime/store/sqlite/detail/reader_pool.hpp"

namespace troupe {

static_assert(sqlite_store::schema_version == sqlite::schema_version);

sqlite_store::sqlite_store(const std::string& path, sqlite_options options)
    : writer_(
          std::make_unique<sqlite::connection>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, options.busy_timeout)),
      commits_([c = writer_.get()](const std::vector<sqlite::write_job*>& batch) {
        return sqlite::run_in_one_transaction(*c, batch);
      }),
      readers_(std::make_unique<sqlite::reader_pool>(path)) {
  sqlite::connection& c = *writer_;
  c.exec("PRAGMA journal_mode=WAL");
  c.exec(options.sync_every_commit ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  // The writer touches the same index pages transaction after transaction:
  // keep them (64 MiB) instead of reading them back from the OS each time.
  c.exec("PRAGMA cache_size=-65536");
  // Checkpoint every 16,384 WAL pages (64 MiB) rather than SQLite's 1,000:
  // a page the batches rewrite again and again is copied back to the file
  // (and the file synced) once per checkpoint, so fewer checkpoints write
  // and sync less for the same commits.
  c.exec("PRAGMA wal_autocheckpoint=16384");
  sqlite::migrate(c, path);
}

sqlite_store::~sqlite_store() = default;

sqlite_store::commit_stats sqlite_store::stats() const { return commits_.stats(); }

std::optional<commit_batching> sqlite_store::batching() const {
  const commit_stats s = commits_.stats();
  return commit_batching{s.transactions, s.commits};
}

}  // namespace troupe
