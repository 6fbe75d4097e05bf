#pragma once
// The PostgreSQL store's schema, versioned in the table troupe_schema and
// migrated when a store starts, in one transaction under an advisory lock:
// processes starting together migrate once.

#include <libpq-fe.h>

namespace troupe::postgres {

inline constexpr int schema_version = 4;

// Brings the database behind `c` to schema_version. Throws
// std::runtime_error with the server's message when it cannot, or when the
// database is newer than this troupe; nothing is changed then.
void migrate(PGconn* c);

}  // namespace troupe::postgres
