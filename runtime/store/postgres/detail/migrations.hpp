#pragma once
// The PostgreSQL store's schema, versioned in the table troupe_schema and
// migrated when a store starts, in one transaction under an advisory lock:
// processes starting together migrate once.

#include <libpq-fe.h>

namespace troupe::postgres {

inline constexpr int schema_version = 11;

// Brings the database behind `c` to schema_version (tests stop at an
// earlier `target` to build a database as an older troupe left it). Throws
// std::runtime_error with the server's message when it cannot, or when the
// database is newer than this troupe; nothing is changed then.
void migrate(PGconn* c, int target = schema_version);

}  // namespace troupe::postgres
