#include "runtime/store/sqlite/detail/connection.hpp"

#include <filesystem>
#include <stdexcept>

namespace troupe::sqlite {

connection::connection(const std::string& path, int flags, std::chrono::milliseconds busy_timeout)
    : file_name_(std::filesystem::path(path).filename().string()), busy_timeout_(busy_timeout) {
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open the store " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout.count()));
}

store_error connection::io_error(const std::string& what) const {
  if ((sqlite3_extended_errcode(db_) & 0xff) != SQLITE_BUSY)
    return store_error{"io", what + ": " + sqlite3_errmsg(db_)};
  return store_error{"io", what + ": the store file " + file_name_ + " stayed locked by another process for " +
                               std::to_string(busy_timeout_.count()) +
                               " ms (SQLite: database is locked). A process holding a transaction open on a SQLite "
                               "file (paused, stopped in a debugger, stuck) blocks every writer on it; for several "
                               "processes on one store, use PostgreSQL"};
}

connection::~connection() {
  for (auto& [_, s] : statements_) sqlite3_finalize(s);
  sqlite3_close(db_);
}

sqlite3_stmt* connection::prepared(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) return nullptr;
  try {
    statements_.emplace(sql, s);
  } catch (...) {
    sqlite3_finalize(s);  // not cached, so nothing else would ever finalize it
    throw;
  }
  return s;
}

bool connection::run(const std::string& sql) {
  sqlite3_stmt* s = prepared(sql);
  if (!s) return false;
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW;
}

}  // namespace troupe::sqlite
