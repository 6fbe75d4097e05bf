// The exporter's queue: producers never wait, a full queue drops and counts.

#include "runtime/telemetry/bounded_queue.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace troupe;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST_CASE("a bounded queue drops what does not fit and never blocks a producer", "[telemetry][bounded_queue]") {
  bounded_queue<int> q(3, 2);

  SECTION("items beyond the capacity are dropped and counted") {
    CHECK(q.try_push(1));
    CHECK(q.try_push(2));
    CHECK(q.try_push(3));
    CHECK_FALSE(q.try_push(4));
    CHECK_FALSE(q.try_push(5));
    CHECK(q.dropped() == 2);
    CHECK(q.take(10, steady::now()) == std::vector<int>{1, 2, 3});
    CHECK(q.try_push(6));  // room again once taken
  }
  SECTION("a push into a full queue returns at once while nobody takes") {
    for (int i = 0; i < 3; ++i) q.try_push(i);
    const auto start = steady::now();
    for (int i = 0; i < 100'000; ++i) q.try_push(i);
    CHECK(steady::now() - start < 1s);
    CHECK(q.dropped() == 100'000);
  }
  SECTION("take returns at most the batch asked for, oldest first") {
    for (int i = 1; i <= 3; ++i) q.try_push(i);
    CHECK(q.take(2, steady::now()) == std::vector<int>{1, 2});
    CHECK(q.take(2, steady::now()) == std::vector<int>{3});
  }
  SECTION("a waiting consumer wakes when a batch is full, not at its deadline") {
    std::thread producer([&] {
      q.try_push(1);
      q.try_push(2);
    });
    const auto start = steady::now();
    auto got = q.take(10, steady::now() + 30s);
    producer.join();
    CHECK(steady::now() - start < 10s);
    CHECK_FALSE(got.empty());
  }
  SECTION("with nothing queued, take returns empty when its time is up") {
    CHECK(q.take(10, steady::now() + 10ms).empty());
  }
  SECTION("a closed queue refuses pushes and wakes its consumer") {
    q.try_push(1);
    std::thread closer([&] { q.close(); });
    auto got = q.take(10, steady::now() + 30s);
    closer.join();
    CHECK(got == std::vector<int>{1});
    CHECK_FALSE(q.try_push(2));
    CHECK(q.dropped() == 1);
  }
}
