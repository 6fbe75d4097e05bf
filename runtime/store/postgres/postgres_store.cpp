#include "runtime/store/postgres/postgres_store.hpp"

#include "runtime/store/postgres/detail/batch_queue.hpp"
#include "runtime/store/postgres/detail/connection_pool.hpp"
#include "runtime/store/postgres/detail/migrations.hpp"

#include <stdexcept>

namespace troupe {

static_assert(postgres_store::schema_version == postgres::schema_version);

bool is_postgres_uri(const std::string& uri) {
  return uri.rfind("postgres://", 0) == 0 || uri.rfind("postgresql://", 0) == 0;
}

postgres_store::postgres_store(const std::string& conninfo, options o)
    : pool_(std::make_unique<postgres::connection_pool>(
          o.pool_size,
          postgres::connect_to(conninfo, o.connect_timeout, o.statement_timeout, o.lock_timeout, o.answer_grace))) {
  postgres::connection_pool::lease l(*pool_);
  if (!l) throw std::runtime_error("cannot connect to PostgreSQL: " + l.failure().message);
  postgres::migrate(l.get());
  queue_ = std::make_unique<postgres::append_queue>(
      [this](std::vector<postgres::queued_append>& batch) { return append_batch(batch); }, "commit", o.max_batch,
      std::chrono::seconds(30), o.append_writers);
  leases_ = std::make_unique<postgres::lease_queue>(
      [this](std::vector<postgres::queued_take>& batch) { return take_lease_batch(batch); }, "lease take", o.max_batch,
      std::chrono::seconds(30));
  // Releases keep their own deadline whatever the owner's: nobody waits on
  // one but the owner's shutdown, and a lease not given up expires anyway.
  releases_ = std::make_unique<postgres::batch_queue<postgres::queued_release>>(
      [this](std::vector<postgres::queued_release>& batch) { return release_lease_batch(batch); }, "lease release",
      o.max_batch, std::chrono::seconds(30));
}

void postgres_store::set_queue_deadline(std::chrono::milliseconds deadline) {
  queue_->set_max_wait(deadline);
  leases_->set_max_wait(deadline);
}

std::optional<commit_batching> postgres_store::batching() const { return queue_->stats(); }

postgres_store::~postgres_store() = default;

}  // namespace troupe
