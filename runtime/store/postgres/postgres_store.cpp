#include "runtime/store/postgres/postgres_store.hpp"

#include "runtime/store/postgres/connection_pool.hpp"
#include "runtime/store/postgres/migrations.hpp"

#include <stdexcept>

namespace troupe {

static_assert(postgres_store::schema_version == postgres::schema_version);

bool is_postgres_uri(const std::string& uri) {
  return uri.rfind("postgres://", 0) == 0 || uri.rfind("postgresql://", 0) == 0;
}

postgres_store::postgres_store(const std::string& conninfo, options o)
    : pool_(std::make_unique<postgres::connection_pool>(
          o.pool_size, postgres::connect_to(conninfo, o.connect_timeout, o.statement_timeout))) {
  postgres::connection_pool::lease l(*pool_);
  if (!l) throw std::runtime_error("cannot connect to PostgreSQL: " + l.failure().message);
  postgres::migrate(l.get());
}

postgres_store::~postgres_store() = default;

}  // namespace troupe
