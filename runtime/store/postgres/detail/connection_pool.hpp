#pragma once
// The PostgreSQL store's connections: opened as needed up to a limit, and
// served first come first served, so that under load no caller waits much
// longer than the others. A connection the server dropped between calls is
// reset before it is handed out (nothing was in flight on it, so that is
// safe); one that broke during a call, or whose call gave up waiting for
// the server, is closed and its slot passes on.

#include "runtime/store/thread_store.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::postgres {

class connection_pool {
 public:
  // Opens a connection ready for use, or returns null with the reason in
  // `why`. When it throws, the lease being made throws too and its slot
  // passes on.
  using opener = std::function<PGconn*(std::string& why)>;

  connection_pool(std::size_t size, opener open);
  ~connection_pool();
  connection_pool(const connection_pool&) = delete;
  connection_pool& operator=(const connection_pool&) = delete;

  // A pooled connection for the length of one call.
  class lease {
   public:
    explicit lease(connection_pool& p) : pool_(p), c_(p.checkout(why_)) {}
    ~lease() {
      if (c_) pool_.checkin(c_);
    }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    explicit operator bool() const { return c_ != nullptr; }
    PGconn* get() const { return c_; }
    store_error failure() const { return store_error{"io", why_}; }

   private:
    connection_pool& pool_;
    std::string why_;
    PGconn* c_;
  };

  // Runs a read. When it fails because its connection turned out to be
  // dropped (a server restart, a failover), it runs once more on a fresh
  // connection: a read changes nothing, so repeating it is safe.
  template <class F>
  auto read(F body) -> decltype(body(nullptr)) {
    for (int attempt = 0;; ++attempt) {
      lease l(*this);
      if (!l) return l.failure();
      auto out = body(l.get());
      if (out || attempt == 1 || PQstatus(l.get()) == CONNECTION_OK) return out;
    }
  }

 private:
  // A caller waiting for a connection.
  struct waiter {
    std::condition_variable wake;
    PGconn* handed = nullptr;
    bool may_open = false;  // a connection was closed: open a new one instead
  };

  PGconn* checkout(std::string& why);
  void checkin(PGconn* c);
  void discard(PGconn* c);  // closes a broken connection (if any) and frees its slot

  std::size_t size_;
  opener open_connection_;
  std::mutex mutex_;
  std::vector<PGconn*> idle_;
  std::deque<waiter*> waiters_;
  std::size_t open_ = 0;
};

// The opener of connections to `conninfo` (anything libpq accepts).
connection_pool::opener connect_to(std::string conninfo,
                                   std::chrono::seconds connect_timeout = std::chrono::seconds(10),
                                   std::chrono::milliseconds statement_timeout = std::chrono::milliseconds(30'000),
                                   std::chrono::milliseconds lock_timeout = std::chrono::milliseconds(2'000),
                                   std::chrono::milliseconds answer_grace = std::chrono::milliseconds(2'000));

}  // namespace troupe::postgres
