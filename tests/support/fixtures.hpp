#pragma once
// The recorded-response corpus in tests/fixtures (TROUPE_FIXTURES_DIR).

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace troupe::testing {

inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TROUPE_FIXTURES_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace troupe::testing
