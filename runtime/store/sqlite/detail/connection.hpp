#pragma once
// A SQLite connection with its prepared statements, and one use of such a
// statement. Every statement is prepared once per connection and kept: the
// store runs the same few statements millions of times.

#include "runtime/store/thread_store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace troupe::sqlite {

class connection {
 public:
  // Throws std::runtime_error with SQLite's message when the file cannot be
  // opened. A statement that finds the file locked retries for `busy_timeout`.
  connection(const std::string& path, int flags,
             std::chrono::milliseconds busy_timeout = std::chrono::milliseconds(5'000));
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  sqlite3* db() const { return db_; }
  bool exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }
  // Null when SQLite refuses the statement.
  sqlite3_stmt* prepared(const std::string& sql);
  // A statement without results, prepared once: what transactions are made of.
  bool run(const std::string& sql);
  // SQLite ends a transaction by itself on some errors (SQLITE_FULL, for one).
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // SQLite's error as a store error. "database is locked" names the file
  // (by its name only: the error may reach a client of troupe serve) and
  // says what to do about it.
  store_error io_error(const std::string& what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string file_name_;
  std::chrono::milliseconds busy_timeout_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// One use of a cached statement: bound, stepped, then reset for the next use.
class statement {
 public:
  statement(connection& c, const std::string& sql) : s_(c.prepared(sql)) {}
  ~statement() {
    if (s_) {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  explicit operator bool() const { return s_ != nullptr; }
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  void reset() { sqlite3_reset(s_); }
  std::int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
  bool null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace troupe::sqlite
