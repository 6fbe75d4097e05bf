#pragma once
// A request to stop a running request.

#include <string>

namespace troupe {

struct cancel {
  std::string request_id;
  std::string reason;

  friend bool operator==(const cancel&, const cancel&) = default;
};

}  // namespace troupe
