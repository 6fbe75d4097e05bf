#include "runtime/store/sqlite/detail/reader_pool.hpp"

#include <exception>
#include <filesystem>

namespace troupe::sqlite {

std::unique_ptr<connection> reader_pool::take(std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  try {
    return std::make_unique<connection>(path_, SQLITE_OPEN_READONLY);
  } catch (const std::exception& e) {
    // The file by its name only: a read's error may reach a client of troupe serve.
    why = e.what();
    if (const auto at = why.find(path_); at != std::string::npos)
      why.replace(at, path_.size(), std::filesystem::path(path_).filename().string());
    return nullptr;
  }
}

void reader_pool::give_back(std::unique_ptr<connection> c) noexcept {
  std::lock_guard lock(mutex_);
  try {
    idle_.push_back(std::move(c));
  } catch (...) {
    // Out of memory: the connection is closed instead of kept, which a
    // later read only pays for by opening another.
  }
}

}  // namespace troupe::sqlite
