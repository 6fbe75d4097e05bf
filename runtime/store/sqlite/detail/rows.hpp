#pragma once
// What the thread part and the conversation part of the SQLite store both
// do with rows: read an entry, and delete a thread with everything it owns.

#include "runtime/store/sqlite/detail/connection.hpp"
#include "thread/thread.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::sqlite {

// The columns an entry is read from, in read_entry's order.
inline constexpr const char* entry_columns = "seq, id, at, kind, payload, refs";

// An entry whose stored text is not UTF-8 is read with U+FFFD in place of
// what is not (see thread_store::set_repair_report); `repaired` counts them.
stored<entry> read_entry(const statement& s, const std::string& thread_id, std::size_t& repaired);

// Stored JSON text, parsed; text that is not UTF-8 is mended first (counted
// in `repaired`). Null if it is not JSON even then.
boost::json::value parse_stored(std::string_view text, std::size_t& repaired);

// What a store says of a thread `n` of whose records it mended.
std::string repaired_texts(std::size_t n);

// Deletes a thread, its entries and the conversation that owns it;
// `existed` says whether there was such a thread.
std::optional<store_error> delete_thread(connection& c, const std::string& thread_id, bool& existed);

}  // namespace troupe::sqlite
