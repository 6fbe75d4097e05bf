#pragma once
// A libpq result as a value that frees itself, and one statement run with
// text parameters.

#include "runtime/store/thread_store.hpp"

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::postgres {

using param = std::optional<std::string>;  // nullopt: SQL NULL

class result {
 public:
  explicit result(PGresult* r) : r_(r) {}
  ~result() { PQclear(r_); }
  result(result&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  result(const result&) = delete;
  result& operator=(const result&) = delete;

  bool ok() const {
    const auto s = PQresultStatus(r_);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
  }
  int rows() const { return PQntuples(r_); }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
  }
  std::int64_t int64(int row, int col) const { return std::stoll(PQgetvalue(r_, row, col)); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  bool boolean(int row, int col) const { return PQgetvalue(r_, row, col)[0] == 't'; }
  std::string affected() const { return PQcmdTuples(r_); }
  // The error as a store_error: unique violations are conflicts; the rest,
  // including a lost connection, are io.
  store_error error(PGconn* c, const std::string& what) const;

 private:
  PGresult* r_;
};

result run(PGconn* c, const char* sql, const std::vector<param>& params = {});

// libpq's messages end in a newline; ours do not.
std::string trimmed_message(std::string message);

}  // namespace troupe::postgres
