#include "runtime/store/postgres/detail/connection_pool.hpp"

#include "runtime/store/postgres/detail/result.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

namespace troupe::postgres {

connection_pool::connection_pool(std::size_t size, opener open)
    : size_(size == 0 ? 1 : size), open_connection_(std::move(open)) {
  idle_.reserve(size_);  // so that checkin, which runs in ~lease, never allocates
}

connection_pool::~connection_pool() {
  for (PGconn* c : idle_) PQfinish(c);
}

PGconn* connection_pool::checkout(std::string& why) {
  std::unique_lock lock(mutex_);
  PGconn* c = nullptr;
  if (waiters_.empty() && !idle_.empty()) {
    c = idle_.back();
    idle_.pop_back();
  } else if (waiters_.empty() && open_ < size_) {
    ++open_;
  } else {
    waiter me;
    waiters_.push_back(&me);
    me.wake.wait(lock, [&] { return me.handed != nullptr || me.may_open; });
    c = me.handed;  // null when handed a slot to open
  }
  lock.unlock();

  // From here this caller holds a slot (and maybe a connection): whatever
  // throws must hand it on, or the callers waiting for it wait forever.
  try {
    if (c) {
      if (PQstatus(c) == CONNECTION_OK) return c;
      PQreset(c);
      if (PQstatus(c) == CONNECTION_OK) return c;
      why = trimmed_message(std::string("lost the connection to PostgreSQL: ") + PQerrorMessage(c));
      discard(std::exchange(c, nullptr));
      return nullptr;
    }
    c = open_connection_(why);
  } catch (...) {
    discard(c);
    throw;
  }
  if (!c) discard(nullptr);
  return c;
}

void connection_pool::checkin(PGconn* c) {
  if (PQstatus(c) != CONNECTION_OK) {
    discard(c);
    return;
  }
  // Still running a statement: its call gave up waiting for the answer
  // (result::unanswered), so the connection is of no further use.
  if (PQtransactionStatus(c) == PQTRANS_ACTIVE) {
    discard(c);
    return;
  }
  if (PQtransactionStatus(c) != PQTRANS_IDLE && !run(c, "ROLLBACK").ok()) {
    discard(c);
    return;
  }
  std::lock_guard lock(mutex_);
  if (!waiters_.empty()) {
    waiter* next = waiters_.front();
    waiters_.pop_front();
    next->handed = c;
    next->wake.notify_one();
    return;
  }
  idle_.push_back(c);
}

void connection_pool::discard(PGconn* c) {
  PQfinish(c);
  std::lock_guard lock(mutex_);
  if (!waiters_.empty()) {  // the slot passes to the next in line, who opens a connection
    waiter* next = waiters_.front();
    waiters_.pop_front();
    next->may_open = true;
    next->wake.notify_one();
    return;
  }
  --open_;
}

namespace {

// The options (server settings, "-c name=value ...") the conninfo sets, or
// else PGOPTIONS (which an options keyword would silence): the store's are
// added to them rather than put in their place.
std::string options_of(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &error);
  PQfreemem(error);
  std::optional<std::string> out;
  for (const PQconninfoOption* o = parsed; o && o->keyword; ++o)
    if (std::string_view(o->keyword) == "options" && o->val) out = o->val;
  PQconninfoFree(parsed);
  if (out) return *out;
  const char* env = std::getenv("PGOPTIONS");
  return env ? env : "";
}

}  // namespace

connection_pool::opener connect_to(std::string conninfo, std::chrono::seconds connect_timeout,
                                   std::chrono::milliseconds statement_timeout, std::chrono::milliseconds lock_timeout,
                                   std::chrono::milliseconds answer_grace) {
  // The settings go in the startup packet, not in a SET after it: PQreset
  // (checkout's, after the server dropped the connection) makes a new
  // session from the same parameters, and a SET would be lost with the old
  // one. The conninfo's own options come after the store's, so they win.
  std::string options =
      "-c client_min_messages=warning -c statement_timeout=" + std::to_string(statement_timeout.count()) +
      " -c lock_timeout=" + std::to_string(lock_timeout.count()) + " " + options_of(conninfo);
  // The server cancels a statement at statement_timeout and says so; an
  // answer that has not come a grace period after that is not coming.
  const std::chrono::milliseconds answer_timeout = statement_timeout + answer_grace;
  return [conninfo = std::move(conninfo), timeout = std::to_string(connect_timeout.count()),
          options = std::move(options), answer_timeout](std::string& why) -> PGconn* {
    // connect_timeout first: what the conninfo (expanded from dbname) sets
    // comes after it and wins; options last, as they already hold the conninfo's.
    const char* keys[] = {"connect_timeout", "dbname", "options", nullptr};
    const char* values[] = {timeout.c_str(), conninfo.c_str(), options.c_str(), nullptr};
    PGconn* c = PQconnectdbParams(keys, values, 1);
    if (PQstatus(c) == CONNECTION_OK) {
      set_answer_timeout(c, answer_timeout);
      return c;
    }
    why = trimmed_message(PQerrorMessage(c));
    PQfinish(c);
    return nullptr;
  };
}

}  // namespace troupe::postgres
