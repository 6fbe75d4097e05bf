#include "world/agent_directory.hpp"

#include "world/world.hpp"

#include <functional>
#include <stdexcept>

namespace troupe {

namespace {

std::uint64_t hash_id(std::string_view id) { return std::hash<std::string_view>{}(id); }

}  // namespace

agent_directory::agent_directory(std::vector<std::string> ids) : ids_(std::move(ids)) {
  if (ids_.size() >= operator_agent) throw std::invalid_argument("agent_directory: too many agents for 32-bit indices");
  index_.reserve(ids_.size());
  for (std::uint32_t i = 0; i < ids_.size(); ++i) {
    if (find(ids_[i])) throw std::invalid_argument("agent_directory: duplicate agent id \"" + ids_[i] + "\"");
    index_.insert(hash_id(ids_[i]), i, [&](std::uint32_t at) { return hash_id(ids_[at]); });
  }
}

std::optional<std::uint32_t> agent_directory::find(std::string_view id) const {
  const std::uint32_t at = index_.find(hash_id(id), [&](std::uint32_t i) { return ids_[i] == id; });
  if (at == flat_index::absent) return std::nullopt;
  return at;
}

std::size_t agent_directory::memory_bytes() const {
  std::size_t bytes = ids_.capacity() * sizeof(std::string) + index_.memory_bytes();
  for (const auto& id : ids_)
    if (id.capacity() > 15) bytes += id.capacity() + 1;  // beyond the short-string buffer
  return bytes;
}

}  // namespace troupe
