#pragma once
// How the PostgreSQL store reads its rows back: entries and conversations,
// with JSON columns that must still hold JSON objects.

#include "runtime/store/conversation_store.hpp"
#include "runtime/store/postgres/detail/result.hpp"

#include <boost/json/object.hpp>

#include <string>

namespace troupe::postgres {

// The columns read_entry reads, in its order.
inline constexpr const char* entry_columns = "seq, id, at, kind, payload::text, refs::text";
// The columns read_conversation reads, in its order.
inline constexpr const char* conversation_columns =
    "id, user_id, platform, platform_identifier, thread_id, title, metadata::text, created_at, updated_at, "
    "last_message_at, archived";

// `what` names the column in the corrupt error.
stored<boost::json::object> parse_object(const std::string& text, const std::string& what);
stored<entry> read_entry(const result& r, int row, const std::string& thread_id);
stored<conversation> read_conversation(const result& r, int row);

}  // namespace troupe::postgres
