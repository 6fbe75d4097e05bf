#include "runtime/store/postgres/detail/result.hpp"

#include <libpq-events.h>
#include <poll.h>

#include <cerrno>
#include <cstdint>
#include <string_view>

namespace troupe::postgres {

store_error result::error(PGconn* c, const std::string& what) const {
  if (unanswered())
    return store_error{"timeout", what + ": PostgreSQL did not answer within " + std::to_string(unanswered_.count()) +
                                      " ms; the connection was given up, and whether the call took effect is unknown"};
  const char* state = r_ ? PQresultErrorField(r_, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = r_ ? PQresultErrorMessage(r_) : "";
  if (message.empty()) message = PQerrorMessage(c);
  message = trimmed_message(std::move(message));
  if (state && std::string_view(state) == "23505") return store_error{"conflict", what + ": " + message};
  // query_canceled: the statement ran past statement_timeout, and the server undid it.
  if (state && std::string_view(state) == "57014") return store_error{"timeout", what + ": " + message};
  // lock_not_available: a row it needed was held by another transaction past lock_timeout.
  if (state && std::string_view(state) == "55P03")
    return store_error{"timeout", what + ": " + message + " (another transaction holds the row; nothing was written)"};
  return store_error{"io", what + ": " + message};
}

namespace {

// The answer timeout is the connection's libpq instance data, under this
// procedure, which has nothing else to do: the milliseconds themselves, not
// a pointer, so nothing is to be freed with the connection.
int answer_timeout_slot(PGEventId, void*, void*) { return 1; }

std::chrono::milliseconds answer_timeout(PGconn* c) {
  return std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(PQinstanceData(c, answer_timeout_slot)));
}

using deadline = std::chrono::steady_clock::time_point;

// Waits until `c`'s socket is ready for `events`, or `until` passes (false).
// A poll error counts as ready: libpq's next call finds and reports it.
bool ready(PGconn* c, short events, deadline until) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{PQsocket(c), events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT32_MAX)));
    if (n != 0 && !(n < 0 && errno == EINTR)) return true;
  }
}

// The answer to what was just sent on `c`, waited for no longer than its
// answer timeout: libpq's own waits (PQexec's) have no deadline at all.
result answer(PGconn* c) {
  const std::chrono::milliseconds timeout = answer_timeout(c);
  const deadline until = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout : deadline::max();
  for (;;) {  // the query may not all be sent yet (nonblocking): send it, reading what comes meanwhile
    const int flushed = PQflush(c);
    if (flushed == 0) break;
    if (flushed < 0) return result(nullptr);
    if (!ready(c, POLLIN | POLLOUT, until)) return result::unanswered(timeout);
    if (!PQconsumeInput(c)) return result(nullptr);
  }
  result out(nullptr);
  bool failed = false;
  for (;;) {
    while (PQisBusy(c)) {
      if (!ready(c, POLLIN, until)) return result::unanswered(timeout);
      if (!PQconsumeInput(c)) break;  // a broken connection: PQgetResult reports it
    }
    PGresult* r = PQgetResult(c);
    if (!r) break;
    result next(r);
    if (failed) continue;  // the first error is the one to report
    failed = !next.ok();
    out = std::move(next);
  }
  return out;
}

// Sends nothing more until this is done: the connection's buffers are
// written as the socket takes them, never waited on blindly.
void nonblocking(PGconn* c) {
  if (!PQisnonblocking(c)) PQsetnonblocking(c, 1);
}

}  // namespace

void set_answer_timeout(PGconn* c, std::chrono::milliseconds timeout) {
  if (!PQinstanceData(c, answer_timeout_slot))
    PQregisterEventProc(c, answer_timeout_slot, "troupe answer timeout", nullptr);
  PQsetInstanceData(c, answer_timeout_slot, reinterpret_cast<void*>(static_cast<std::intptr_t>(timeout.count())));
}

result run(PGconn* c, const char* sql, const std::vector<param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const param& p : params) values.push_back(p ? p->c_str() : nullptr);
  nonblocking(c);
  if (!PQsendQueryParams(c, sql, static_cast<int>(params.size()), nullptr, values.data(), nullptr, nullptr, 0))
    return result(nullptr);
  return answer(c);
}

result run_script(PGconn* c, const char* sql) {
  nonblocking(c);
  if (!PQsendQuery(c, sql)) return result(nullptr);
  return answer(c);
}

std::string trimmed_message(std::string message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

}  // namespace troupe::postgres
