#pragma once
// A libpq result as a value that frees itself, and one statement run with
// text parameters, under the deadline its connection carries.

#include "runtime/store/thread_store.hpp"

#include <libpq-fe.h>

#include <chrono>
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
  // No answer came within `waited`: the server or the network is stuck.
  static result unanswered(std::chrono::milliseconds waited) {
    result out(nullptr);
    out.unanswered_ = waited;
    return out;
  }
  ~result() { PQclear(r_); }
  result(result&& o) noexcept : r_(std::exchange(o.r_, nullptr)), unanswered_(o.unanswered_) {}
  result& operator=(result&& o) noexcept {
    std::swap(r_, o.r_);
    unanswered_ = o.unanswered_;
    return *this;
  }
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
  // True when the call gave up waiting for the server (a "timeout").
  bool unanswered() const { return unanswered_.count() > 0; }
  // The error as a store_error: unique violations are conflicts, statement
  // and lock timeouts and calls left unanswered are timeouts; the rest,
  // including a lost connection, are io.
  store_error error(PGconn* c, const std::string& what) const;

 private:
  PGresult* r_;
  std::chrono::milliseconds unanswered_{0};
};

// How long a call on `c` waits for the server's answer, carried by the
// connection itself (so every caller of run() keeps to it): past it the
// call is given up and the connection is left busy, and the pool drops it.
// A server that is stopped or cut off never answers, and its
// statement_timeout never fires. No cancel request is sent: libpq's
// PQcancel waits, without a deadline, for the server to close the cancel
// connection, which such a server never does; a server that is merely slow
// has cancelled the statement itself at statement_timeout. Zero, the
// default: no limit.
void set_answer_timeout(PGconn* c, std::chrono::milliseconds timeout);

result run(PGconn* c, const char* sql, const std::vector<param>& params = {});
// Several statements in one string (the simple query protocol), as PQexec
// runs them: the first error, or the last statement's result.
result run_script(PGconn* c, const char* sql);

// libpq's messages end in a newline; ours do not.
std::string trimmed_message(std::string message);

}  // namespace troupe::postgres
