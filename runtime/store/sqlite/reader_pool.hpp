#pragma once
// The reader connections of a store: WAL lets them read beside the one
// writer. Opened as reads need them and kept for the next read.

#include "runtime/store/sqlite/connection.hpp"

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
  // that they see one committed state.
  class reader {
   public:
    explicit reader(reader_pool& pool) : pool_(pool), c_(pool.take()) {}
    ~reader() {
      if (in_transaction_) c_->exec("COMMIT");
      pool_.give_back(std::move(c_));
    }
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
    connection& operator*() { return *c_; }
    bool begin() { return in_transaction_ = c_->exec("BEGIN"); }

   private:
    reader_pool& pool_;
    std::unique_ptr<connection> c_;
    bool in_transaction_ = false;
  };

 private:
  std::unique_ptr<connection> take();
  void give_back(std::unique_ptr<connection> c) noexcept;  // runs in ~reader

  std::string path_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<connection>> idle_;
};

}  // namespace troupe::sqlite
