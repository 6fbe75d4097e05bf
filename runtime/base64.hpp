#pragma once
// Base64 (RFC 4648 section 4: the standard alphabet, padded with '='), for
// header values that must travel as visible ASCII.

#include <string>
#include <string_view>

namespace troupe {

std::string base64_encoded(std::string_view bytes);

}  // namespace troupe
