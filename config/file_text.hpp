#pragma once
// A whole file's bytes, as a config file, a scenario or a profiles file is
// read: nothing when it cannot be opened (the caller names the file in its
// own error).

#include <optional>
#include <string>

namespace troupe {

std::optional<std::string> file_text(const std::string& path);

}  // namespace troupe
