#pragma once
// What the thread part and the conversation part of the SQLite store both
// do with rows: read an entry, and delete a thread with everything it owns.

#include "runtime/store/sqlite/connection.hpp"
#include "strategy/thread.hpp"

#include <optional>
#include <string>

namespace troupe::sqlite {

// The columns an entry is read from, in read_entry's order.
inline constexpr const char* entry_columns = "seq, id, at, kind, payload, refs";

stored<entry> read_entry(const statement& s, const std::string& thread_id);

// Deletes a thread, its entries and the conversation that owns it;
// `existed` says whether there was such a thread.
std::optional<store_error> delete_thread(connection& c, const std::string& thread_id, bool& existed);

}  // namespace troupe::sqlite
