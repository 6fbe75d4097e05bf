#include "apps/serve/auth.hpp"

namespace troupe::serve {

bool constant_time_equal(std::string_view presented, std::string_view known) {
  // Runs over the known key's length whatever was presented; the length
  // difference joins the result instead of returning early.
  unsigned diff = presented.size() == known.size() ? 0u : 1u;
  const std::size_t n = presented.size();
  for (std::size_t i = 0; i < known.size(); ++i) {
    const unsigned char p = n ? static_cast<unsigned char>(presented[i % n]) : 0;
    diff |= p ^ static_cast<unsigned char>(known[i]);
  }
  return diff == 0;
}

const api_key* key_table::key_of(std::string_view authorization) const {
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.size() <= scheme.size()) return nullptr;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(scheme[i])))
      return nullptr;
  const std::string_view presented = authorization.substr(scheme.size());
  const api_key* found = nullptr;
  for (const api_key& k : keys_)  // every key, whether or not one matched already
    if (constant_time_equal(presented, k.key) && !found) found = &k;
  return found;
}

std::optional<std::string> key_table::user_of(std::string_view authorization) const {
  const api_key* k = key_of(authorization);
  if (!k) return std::nullopt;
  return k->user;
}

}  // namespace troupe::serve
