#include "config/field_error.hpp"

namespace troupe {

namespace {

std::string message(const std::string& file, const std::string& key, std::int64_t line, const std::string& reason) {
  std::string m = key.empty() ? reason : key + ": " + reason;
  m += " (" + file;
  if (line > 0) m += ":" + std::to_string(line);
  return m + ")";
}

}  // namespace

field_error::field_error(std::string file_, std::string key_, std::int64_t line_, std::string reason_)
    : std::runtime_error(message(file_, key_, line_, reason_)),
      file(std::move(file_)),
      key(std::move(key_)),
      line(line_),
      reason(std::move(reason_)) {}

}  // namespace troupe
