#pragma once
// A request refused before it started (the thread is busy, the query is
// invalid). Nothing was committed for it.

#include <string>

namespace troupe {

struct request_error {
  std::string request_id;
  std::string reason;  // an error_type: busy, invalid_query, …
  std::string message;

  friend bool operator==(const request_error&, const request_error&) = default;
};

}  // namespace troupe
