// The compact stores the social world keeps its state in: a flat hash
// index, a text arena, per-agent bounded lists, the agent directory.

#include "world/agent_directory.hpp"
#include "world/bounded_lists.hpp"
#include "world/flat_index.hpp"
#include "world/text_arena.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace troupe;

TEST_CASE("flat_index: finds every position through growth, colliding hashes included") {
  std::vector<std::uint64_t> keys;
  flat_index index;
  // Hashes with few distinct low bits: long probe runs, and rehashes on growth.
  auto hash_of = [&](std::uint32_t at) { return keys[at] % 7; };
  for (std::uint32_t i = 0; i < 1'000; ++i) {
    keys.push_back(i * 3 + 1);
    index.insert(hash_of(i), i, hash_of);
  }
  for (std::uint32_t i = 0; i < 1'000; ++i)
    REQUIRE(index.find(keys[i] % 7, [&](std::uint32_t at) { return keys[at] == keys[i]; }) == i);
  CHECK(index.find(2 % 7, [&](std::uint32_t at) { return keys[at] == 2; }) == flat_index::absent);
  CHECK(flat_index().find(0, [](std::uint32_t) { return true; }) == flat_index::absent);
}

TEST_CASE("text_arena: texts read back across blocks, a long one in a block of its own") {
  text_arena arena;
  std::vector<std::pair<std::uint64_t, std::string>> stored;
  for (int i = 0; stored.size() < 3'000; ++i) {
    std::string text(500 + i % 300, static_cast<char>('a' + i % 26));
    stored.emplace_back(arena.append(text), text);
  }
  const std::string big(text_arena::block_size + 10, 'z');
  stored.emplace_back(arena.append(big), big);
  stored.emplace_back(arena.append("after"), "after");
  for (const auto& [at, text] : stored) REQUIRE(arena.at(at, text.size()) == text);
  CHECK(arena.memory_bytes() >= 3 * text_arena::block_size);
}

TEST_CASE("bounded_lists: newest first, bounded, unseen since mark_seen, lists apart") {
  bounded_lists<2> lists(3, {3, 0});
  for (std::uint32_t v = 1; v <= 5; ++v) lists.push(0, 1, v);
  lists.push(1, 1, 9);
  std::vector<std::uint32_t> got;
  lists.for_each_newest(0, 1, lists.unseen(0, 1), [&](std::uint32_t v) { got.push_back(v); });
  CHECK(got == std::vector<std::uint32_t>{5, 4, 3});
  CHECK(lists.unseen(0, 1) == 5);
  CHECK(lists.unseen(1, 1) == 1);  // counted though a list of capacity 0 keeps nothing
  CHECK(lists.unseen(0, 0) == 0);
  lists.mark_seen(1);
  CHECK(lists.unseen(0, 1) == 0);
  CHECK(lists.unseen(1, 1) == 0);
  lists.push(0, 1, 6);
  got.clear();
  lists.for_each_newest(0, 1, lists.unseen(0, 1), [&](std::uint32_t v) { got.push_back(v); });
  CHECK(got == std::vector<std::uint32_t>{6});
}

TEST_CASE("agent_directory: an id's index, an unknown id, a duplicate refused") {
  const agent_directory d({"b", "a", "c"});
  CHECK(d.find("a") == 1u);
  CHECK(d.find("c") == 2u);
  CHECK_FALSE(d.find("d"));
  CHECK(d.id(0) == "b");
  CHECK_THROWS_AS(agent_directory({"a", "b", "a"}), std::invalid_argument);
}
