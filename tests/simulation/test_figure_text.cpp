#include "simulation/figure_text.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace troupe;

TEST_CASE("figure text: counts with their thousands grouped") {
  CHECK(grouped(std::int64_t{0}) == "0");
  CHECK(grouped(std::int64_t{999}) == "999");
  CHECK(grouped(std::int64_t{1000}) == "1,000");
  CHECK(grouped(std::int64_t{1234567}) == "1,234,567");
  CHECK(grouped(std::int64_t{-1234}) == "-1,234");
  CHECK(grouped(std::numeric_limits<std::int64_t>::min()) == "-9,223,372,036,854,775,808");
  CHECK(grouped(2.5) == "3");  // halves away from zero
  CHECK(grouped(std::nan("")) == "?");
}

TEST_CASE("figure text: dollars with enough digits to tell small costs apart") {
  CHECK(dollars(0) == "$0");
  CHECK(dollars(12.345) == "$12.35");
  CHECK(dollars(0.5) == "$0.500");
  CHECK(dollars(0.0123) == "$0.0123");
  CHECK(dollars(0.000456) == "$0.000456");
  CHECK(dollars(HUGE_VAL) == "?");
}
