#pragma once
// How the command line shows threads, entries and conversations: one JSON
// shape shared by `ask --json`, `threads show --json` and `conversations
// trace --json`, and one line per entry for people.

#include "runtime/store/conversation_store.hpp"

#include <boost/json/array.hpp>

#include <ostream>
#include <string>

namespace troupe::cli {

// [{"seq", "kind", "payload", "refs", "at", "id"}, …]
boost::json::array entries_json(const thread_view& t);
boost::json::object entry_json(const entry& e);

// "2026-11-21T08:45:47Z"; "-" for 0.
std::string iso_time(std::int64_t unix_ms);

// "3  message    user: What is 2 + 2?"
void print_entry(std::ostream& out, const entry& e);
void print_conversation(std::ostream& out, const conversation& c);

}  // namespace troupe::cli
