#include "config/file_text.hpp"

#include <fstream>
#include <sstream>

namespace troupe {

std::optional<std::string> file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

}  // namespace troupe
