#include "world/agent_directory.hpp"

#include "world/world.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace troupe {

agent_directory::agent_directory(std::vector<std::string> ids) : ids_(std::move(ids)) {
  if (ids_.size() >= operator_agent) throw std::invalid_argument("agent_directory: too many agents for 32-bit indices");
  by_id_.resize(ids_.size());
  std::iota(by_id_.begin(), by_id_.end(), 0u);
  std::sort(by_id_.begin(), by_id_.end(), [&](std::uint32_t a, std::uint32_t b) { return ids_[a] < ids_[b]; });
  for (std::size_t i = 1; i < by_id_.size(); ++i)
    if (ids_[by_id_[i - 1]] == ids_[by_id_[i]])
      throw std::invalid_argument("agent_directory: duplicate agent id \"" + ids_[by_id_[i]] + "\"");
}

std::optional<std::uint32_t> agent_directory::find(std::string_view id) const {
  const auto it = std::lower_bound(by_id_.begin(), by_id_.end(), id,
                                   [&](std::uint32_t index, std::string_view v) { return ids_[index] < v; });
  if (it == by_id_.end() || ids_[*it] != id) return std::nullopt;
  return *it;
}

}  // namespace troupe
