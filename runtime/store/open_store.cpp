#include "runtime/store/open_store.hpp"

#include "runtime/store/memory_store.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"

#include <cstdlib>
#include <exception>
#include <filesystem>

namespace troupe {

namespace {

template <class Store>
store_handle handle_of(std::shared_ptr<Store> s) {
  return {s, s};
}

// The stores' constructors throw when they cannot open what they are given.
template <class Store, class... Args>
stored<store_handle> opened(const Args&... args) {
  try {
    return handle_of(std::make_shared<Store>(args...));
  } catch (const std::exception& e) {
    return store_error{"io", e.what()};
  }
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

stored<store_handle> open_store(const std::string& uri, const std::string& fallback) {
  const std::string u = uri.empty() ? fallback : uri;
  if (u.empty() || u == "memory:") return handle_of(std::make_shared<memory_store>());
  if (u.rfind("sqlite:", 0) == 0) {
    std::string path = u.substr(7);
    sqlite_options options;
    // sqlite:PATH?sync=full: every transaction is fsynced before its commits are answered.
    if (const auto q = path.find('?'); q != std::string::npos) {
      const std::string query = path.substr(q + 1);
      path.resize(q);
      if (query == "sync=full")
        options.sync_every_commit = true;
      else if (query != "sync=normal")
        return store_error{"invalid", "unknown SQLite option ?" + query + " (sync=full or sync=normal)"};
    }
    if (path.empty())
      return store_error{"invalid", "the store sqlite: names no file: give a path, e.g. sqlite:./troupe.db"};
    std::error_code ec;  // a directory that cannot be made shows as the file not opening
    if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir, ec);
    return opened<sqlite_store>(path, options);
  }
  if (is_postgres_uri(u)) return opened<postgres_store>(u);
  return store_error{"invalid", "unknown store " + u + " (memory:, sqlite:PATH or postgres://…)"};
}

std::string default_store_uri() {
  const std::string data = env("XDG_DATA_HOME");
  const std::string home = env("HOME");
  const std::string dir = !data.empty() ? data + "/troupe" : (home.empty() ? "." : home + "/.local/share/troupe");
  return "sqlite:" + dir + "/troupe.db";
}

}  // namespace troupe
