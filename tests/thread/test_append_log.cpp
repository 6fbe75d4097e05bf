#include "thread/append_log.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace troupe;

namespace {

void append_one(append_log<std::string>& log, std::size_t size, std::string value) {
  std::vector<std::string> one{std::move(value)};
  REQUIRE(log.try_append(size, one));
}

}  // namespace

TEST_CASE("append_log: every element reads back at its index across many segments") {
  append_log<std::string> log;
  for (std::size_t i = 0; i < 5'000; ++i) append_one(log, i, std::to_string(i));
  for (std::size_t i = 0; i < 5'000; ++i) REQUIRE(log[i] == std::to_string(i));
}

TEST_CASE("append_log: a batch that spans segments lands in order") {
  append_log<std::string> log;
  std::vector<std::string> batch;
  for (int i = 0; i < 300; ++i) batch.push_back("e" + std::to_string(i));
  REQUIRE(log.try_append(0, batch));
  for (std::size_t i = 0; i < 300; ++i) REQUIRE(log[i] == "e" + std::to_string(i));
}

TEST_CASE("append_log: a log of 20 elements (five rounds of four entries) holds 24 slots, not 28") {
  append_log<std::string> log;
  for (std::size_t i = 0; i < 4; ++i) append_one(log, i, "x");
  CHECK(log.capacity() == 4);
  for (std::size_t i = 4; i < 20; ++i) append_one(log, i, "x");
  CHECK(log.capacity() == 24);
}

TEST_CASE("append_log: no more than about 40% of the slots stand empty") {
  append_log<std::string> log;
  for (std::size_t i = 0; i < 3'000; ++i) {
    append_one(log, i, "x");
    const auto size = static_cast<double>(i + 1);
    if (i >= 4) REQUIRE(static_cast<double>(log.capacity()) <= size * 1.5 + 4);
  }
}

TEST_CASE("append_log: a second owner that appends at a size already taken is refused") {
  append_log<std::string> log;
  append_one(log, 0, "a");
  std::vector<std::string> late{"b"};
  CHECK_FALSE(log.try_append(0, late));
  CHECK(late[0] == "b");
}
