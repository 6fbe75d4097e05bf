#include "simulation/activation.hpp"

#include <catch2/catch.hpp>

#include <numeric>

using namespace troupe;

TEST_CASE("the clock's simulated hour follows the rounds from the start hour") {
  clock_spec c;
  c.start_hour = 22;
  c.minutes_per_round = 90;
  CHECK(hour_of_round(c, 1) == 22);
  CHECK(hour_of_round(c, 2) == 23);
  CHECK(hour_of_round(c, 3) == 1);  // 22:00 + 180 minutes, past midnight
}

TEST_CASE("an activation probability is the clock's times the hour's weight, at most 1") {
  clock_spec c;
  c.mode = activation_mode::probability;
  c.probability = 0.4;
  std::array<double, 24> hourly{};
  hourly.fill(1.0);
  hourly[8] = 0.5;
  hourly[9] = 5.0;
  c.hourly = hourly;
  c.start_hour = 8;
  CHECK(activation_probability(c, 1) == Approx(0.2));
  CHECK(activation_probability(c, 2) == 1.0);
  CHECK(activation_probability(c, 3) == Approx(0.4));
}

TEST_CASE("which agents a round activates") {
  clock_spec c;
  SECTION("every round: all of them, in index order") {
    const auto a = activated_agents(c, 1, 3, 5, {});
    CHECK(a == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
  }
  SECTION("by probability: about that share, the same agents for the same seed and round") {
    c.mode = activation_mode::probability;
    c.probability = 0.3;
    const auto a = activated_agents(c, 42, 2, 10'000, {});
    CHECK(a.size() > 2'800);
    CHECK(a.size() < 3'200);
    CHECK(std::is_sorted(a.begin(), a.end()));
    CHECK(a == activated_agents(c, 42, 2, 10'000, {}));
    CHECK(a != activated_agents(c, 42, 3, 10'000, {}));
    CHECK(a != activated_agents(c, 43, 2, 10'000, {}));
  }
  SECTION("by events: after the first round, exactly the agents something reached") {
    c.mode = activation_mode::events;
    c.probability = 1.0;
    CHECK(activated_agents(c, 1, 1, 4, {}).size() == 4);
    CHECK(activated_agents(c, 1, 2, 4, {1, 3}) == std::vector<std::uint32_t>{1, 3});
  }
}

TEST_CASE("a sample of agents is distinct, in index order, and the same for the same seed") {
  std::vector<std::uint32_t> all(100);
  std::iota(all.begin(), all.end(), 0U);
  const auto s = sample_agents(all, 10, 5, 1);
  CHECK(s.size() == 10);
  CHECK(std::is_sorted(s.begin(), s.end()));
  CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());
  CHECK(s == sample_agents(all, 10, 5, 1));
  CHECK(s != sample_agents(all, 10, 5, 2));
  CHECK(sample_agents(all, 0, 5, 1) == all);
  CHECK(sample_agents(all, 200, 5, 1) == all);
}
