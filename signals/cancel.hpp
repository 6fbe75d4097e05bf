#pragma once
// A request to stop a running request.

#include <string>

namespace troupe {

struct cancel {
  std::string request_id;
  std::string reason;
  // The error the request ends with; empty: cancelled. A request stopped
  // because its agent stops ends with shutdown, which a caller may retry.
  std::string error_type{};

  friend bool operator==(const cancel&, const cancel&) = default;
};

}  // namespace troupe
