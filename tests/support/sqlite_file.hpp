#pragma once
// A SQLite file of a test's own in the temporary directory, removed with
// its WAL and shared-memory files when the test is done.

#include "runtime/random_ids.hpp"

#include <filesystem>
#include <string>

namespace troupe::testing {

struct sqlite_file {
  std::filesystem::path path;
  explicit sqlite_file(const std::string& prefix = "troupe-test")
      : path(std::filesystem::temp_directory_path() / (prefix + "-" + random_ids().next("db") + ".db")) {}
  sqlite_file(const sqlite_file&) = delete;
  sqlite_file& operator=(const sqlite_file&) = delete;
  ~sqlite_file() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  }
};

}  // namespace troupe::testing
