#include "simulation/activation.hpp"

#include "world/seeded_random.hpp"

#include <algorithm>

namespace troupe {

namespace {

// Salts that keep the clock's draws apart from every other draw of a run.
constexpr std::uint64_t activation_salt = 0x61637469766174ULL;  // "activat"

}  // namespace

std::int64_t total_rounds(const scenario& s) {
  if (s.workflow.empty()) return 1;
  std::int64_t n = 0;
  for (const auto& step : s.workflow)
    if (const auto* r = std::get_if<run_rounds>(&step)) n += std::max<std::int64_t>(0, r->rounds);
  return n;
}

int hour_of_round(const clock_spec& clock, std::int64_t round) {
  const std::int64_t minutes = clock.start_hour * 60 + (round - 1) * clock.minutes_per_round;
  return static_cast<int>(((minutes / 60) % 24 + 24) % 24);
}

double activation_probability(const clock_spec& clock, std::int64_t round) {
  double p = clock.probability;
  if (clock.hourly) p *= (*clock.hourly)[static_cast<std::size_t>(hour_of_round(clock, round))];
  return std::clamp(p, 0.0, 1.0);
}

std::vector<std::uint32_t> activated_agents(const clock_spec& clock, std::uint64_t seed, std::int64_t round,
                                            std::uint32_t population, const std::vector<std::uint32_t>& reached) {
  std::vector<std::uint32_t> out;
  if (clock.mode == activation_mode::every_round) {
    out.resize(population);
    for (std::uint32_t i = 0; i < population; ++i) out[i] = i;
    return out;
  }
  if (clock.mode == activation_mode::events && round > 1) return reached;
  const double p = activation_probability(clock, round);
  for (std::uint32_t i = 0; i < population; ++i)
    if (unit_draw(draw64(seed ^ activation_salt, static_cast<std::uint64_t>(round), i)) < p) out.push_back(i);
  return out;
}

std::vector<std::uint32_t> sample_agents(const std::vector<std::uint32_t>& from, std::size_t count, std::uint64_t seed,
                                         std::uint64_t salt) {
  if (count == 0 || count >= from.size()) return from;
  // A partial Fisher–Yates shuffle with seeded draws, then back in index order.
  std::vector<std::uint32_t> pool = from;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = i + bounded_draw(draw64(seed, salt, i), pool.size() - i);
    std::swap(pool[i], pool[j]);
  }
  pool.resize(count);
  std::sort(pool.begin(), pool.end());
  return pool;
}

}  // namespace troupe
