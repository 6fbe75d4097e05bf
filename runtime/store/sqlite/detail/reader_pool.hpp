#pragma once
// The reader connections of a store: WAL lets them read beside the one
// writer. Opened as reads need them and kept for the next read.

#include "runtime/store/sqlite/detail/connection.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::sqlite {

class reader_pool {
 public:
  explicit reader_pool(std::string path) : path_(std::move(path)) {}

  // A reader connection for one read, returned to the pool afterwards.
  // Reads of several statements run in one read transaction (begin()), so
  // that they see one committed state. Without a connection (none could be
  // opened: the file is gone, no file descriptors are left) it is false
  // and failure() says why, so that a read fails as a value, like any
  // other store error.
  class reader {
   public:
    explicit reader(reader_pool& pool) : pool_(pool), c_(pool.take(why_)) {}
    ~reader() {
      if (!c_) return;
      if (in_transaction_) c_->exec("COMMIT");
      pool_.give_back(std::move(c_));
    }
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
    explicit operator bool() const { return c_ != nullptr; }
    store_error failure() const { return store_error{"io", why_}; }
    connection& operator*() { return *c_; }
    bool begin() { return in_transaction_ = c_->exec("BEGIN"); }

   private:
    reader_pool& pool_;
    std::string why_;
    std::unique_ptr<connection> c_;
    bool in_transaction_ = false;
  };

 private:
  // Null, with the reason in `why`, when no connection can be opened.
  std::unique_ptr<connection> take(std::string& why);
  void give_back(std::unique_ptr<connection> c) noexcept;  // runs in ~reader

  std::string path_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<connection>> idle_;
};

}  // namespace troupe::sqlite
