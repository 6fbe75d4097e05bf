#pragma once
// A store named by a URI, as a user gives one on a command line or in a
// configuration: memory:, sqlite:PATH (sqlite:PATH?sync=full to fsync every
// transaction), postgres://… or postgresql://….

#include "runtime/store/conversation_store.hpp"
#include "runtime/store/thread_store.hpp"

#include <memory>
#include <string>

namespace troupe {

// One database's two faces: its threads and its conversations.
struct store_handle {
  std::shared_ptr<thread_store> threads;
  std::shared_ptr<conversation_store> conversations;
};

// The store `uri` names, opened (a SQLite file's directory is created if
// needed); `fallback` when `uri` is empty, memory when both are. Errors:
// invalid for a URI that names no store (an unknown scheme, sqlite: without
// a path), io for a store that cannot be opened (with SQLite's or the
// server's reason).
stored<store_handle> open_store(const std::string& uri, const std::string& fallback = {});

// sqlite:$XDG_DATA_HOME/troupe/troupe.db (or ~/.local/share/troupe/troupe.db,
// or ./troupe/troupe.db without a home).
std::string default_store_uri();

}  // namespace troupe
