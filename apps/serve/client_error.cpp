#include "apps/serve/client_error.hpp"

#include "signals/error_info.hpp"

#include <iostream>

namespace troupe::serve {

bool server_side_error(std::string_view type) {
  return type == error_type::store_failed || type == error_type::store_timeout || type == "internal" ||
         type.rfind("store_", 0) == 0;
}

std::string client_message(std::string_view type, const std::string& message) {
  if (!server_side_error(type)) return message;
  // One write, so that lines from concurrent requests do not interleave.
  std::cerr << ("troupe serve: " + std::string(type) + ": " + message + "\n") << std::flush;
  return "the server failed (" + std::string(type) + "); its log has the details";
}

}  // namespace troupe::serve
