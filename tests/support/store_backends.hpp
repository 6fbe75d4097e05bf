#pragma once
// The stores as the conformance suite and benchmarks use them: each backend
// owns a fresh, empty store and cleans up after itself.
//
// PostgreSQL runs against the server named by TROUPE_TEST_POSTGRES (set by
// scripts/with-postgres.sh); each backend gets its own schema, dropped at
// the end. Without a server, `ready()` is false and says why.

#include "runtime/store/memory_store.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"

#include <libpq-fe.h>

#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace troupe::testing {

inline std::string unique_suffix() {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

struct memory_backend {
  static constexpr const char* name = "memory";
  std::shared_ptr<memory_store> store = std::make_shared<memory_store>();
  bool ready() const { return true; }
  std::string why_not() const { return {}; }
  thread_store& threads() { return *store; }
  conversation_store& conversations() { return *store; }
};

// The memory store holding its threads in entry_codec's form.
struct compact_memory_backend {
  static constexpr const char* name = "memory (compact)";
  std::shared_ptr<memory_store> store = std::make_shared<memory_store>(memory_form::compact);
  bool ready() const { return true; }
  std::string why_not() const { return {}; }
  thread_store& threads() { return *store; }
  conversation_store& conversations() { return *store; }
};

struct sqlite_backend {
  static constexpr const char* name = "sqlite";
  explicit sqlite_backend(sqlite_options options = {})
      : store(std::make_shared<sqlite_store>(path.string(), options)) {}
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("troupe-store-" + unique_suffix() + ".db");
  std::shared_ptr<sqlite_store> store;
  bool ready() const { return true; }
  std::string why_not() const { return {}; }
  thread_store& threads() { return *store; }
  conversation_store& conversations() { return *store; }
  // Closes the file and opens it again, as a restarted process would.
  void reopen() {
    store.reset();
    store = std::make_shared<sqlite_store>(path.string());
  }
  ~sqlite_backend() {
    store.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  }
};

class postgres_backend {
 public:
  static constexpr const char* name = "postgres";

  // Unopened: the schema exists, empty, until reopen() (a test builds an
  // older troupe's database in it first, with sql()).
  enum class opening { now, later };

  explicit postgres_backend(postgres_options options = {}, opening when = opening::now) {
    const char* server = std::getenv("TROUPE_TEST_POSTGRES");
    if (!server || !*server) return;
    server_ = server;
    schema_ = "troupe_test_" + unique_suffix();
    admin("CREATE SCHEMA " + schema_);
    const char separator = server_.find('?') == std::string::npos ? '?' : '&';
    // The schema names the sessions too, so that a test can find its own.
    uri_ = server_ + separator + "options=-csearch_path%3D" + schema_ + "&application_name=" + schema_;
    if (when == opening::now) store = std::make_shared<postgres_store>(uri_, options);
  }
  ~postgres_backend() {
    if (uri_.empty()) return;
    store.reset();
    try {
      admin("DROP SCHEMA " + schema_ + " CASCADE");
    } catch (...) {
    }
  }
  postgres_backend(const postgres_backend&) = delete;
  postgres_backend& operator=(const postgres_backend&) = delete;

  bool ready() const { return !uri_.empty(); }
  std::string why_not() const {
    return "troupe-skip: no PostgreSQL server (TROUPE_TEST_POSTGRES is unset; scripts/with-postgres.sh starts one)";
  }
  thread_store& threads() { return *store; }
  conversation_store& conversations() { return *store; }
  const std::string& uri() const { return uri_; }
  // Ends this store's sessions from the server's side, as a restart or a
  // failover would; other tests' sessions are left alone.
  void drop_connections() const {
    admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + schema_ + "'");
  }
  // Reconnects, as a restarted process would.
  void reopen() {
    store.reset();
    store = std::make_shared<postgres_store>(uri_);
  }

  // Runs `f` on a connection of its own to this backend's schema.
  template <class F>
  void sql(F&& f) const {
    PGconn* c = PQconnectdb(uri_.c_str());
    try {
      f(c);
    } catch (...) {
      PQfinish(c);
      throw;
    }
    PQfinish(c);
  }

  std::shared_ptr<postgres_store> store;

 private:
  void admin(const std::string& sql) const {
    PGconn* c = PQconnectdb(server_.c_str());
    PGresult* r = PQexec(c, ("SET client_min_messages = warning; " + sql).c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    const std::string why = PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    if (!ok) throw std::runtime_error(sql + ": " + why);
  }

  std::string server_;
  std::string schema_;
  std::string uri_;
};

}  // namespace troupe::testing
