#pragma once
// The SQLite store's schema, versioned in PRAGMA user_version and migrated
// when a file is opened: each migration takes the file from the version
// before it to its own, in a transaction of its own.

#include "runtime/store/sqlite/detail/connection.hpp"

#include <string>

namespace troupe::sqlite {

inline constexpr int schema_version = 6;

// Brings the file behind `c` (named `path` in errors) to schema_version.
// Throws std::runtime_error when the file is newer than this troupe or a
// migration fails; a failed migration leaves the file as it was.
void migrate(connection& c, const std::string& path);

}  // namespace troupe::sqlite
