#pragma once
// API keys to users. A presented key is compared with every configured key
// in time that depends only on the configured keys' lengths, so neither a
// match nor a shared prefix shows in the answer's timing. Keys are never
// logged or echoed.

#include "apps/serve/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::serve {

class key_table {
 public:
  explicit key_table(std::vector<api_key> keys) : keys_(std::move(keys)) {}
  // The key of an `Authorization: Bearer KEY` header's value, if it is known.
  const api_key* key_of(std::string_view authorization) const;
  // Its user.
  std::optional<std::string> user_of(std::string_view authorization) const;

 private:
  std::vector<api_key> keys_;
};

bool constant_time_equal(std::string_view presented, std::string_view known);

}  // namespace troupe::serve
