#include "runtime/store/sqlite/connection.hpp"

#include <stdexcept>

namespace troupe::sqlite {

connection::connection(const std::string& path, int flags) {
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open the store " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
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
