// The timer thread serves every provider's delays and retries: one callback
// that throws must not end it, nor the process.

#include "runtime/net/timer_queue.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>

using namespace troupe;
using namespace std::chrono_literals;

TEST_CASE("a timer callback that throws ends neither the timer thread nor the callbacks after it") {
  timer_queue timers;
  std::promise<std::string> reported;
  std::promise<void> later_ran;

  timers.schedule(
      0ms, [] { throw std::runtime_error("boom"); }, [&](const std::string& what) { reported.set_value(what); });
  timers.schedule(1ms, [&] { later_ran.set_value(); });

  auto what = reported.get_future();
  auto later = later_ran.get_future();
  REQUIRE(what.wait_for(10s) == std::future_status::ready);
  CHECK(what.get() == "boom");
  REQUIRE(later.wait_for(10s) == std::future_status::ready);
  CHECK(timers.callbacks_thrown() == 1);

  SECTION("an on_throw handler that throws is caught and counted too") {
    std::promise<void> after;
    timers.schedule(
        0ms, [] { throw 42; }, [](const std::string&) { throw std::logic_error("handler"); });
    timers.schedule(1ms, [&] { after.set_value(); });
    REQUIRE(after.get_future().wait_for(10s) == std::future_status::ready);
    CHECK(timers.callbacks_thrown() == 3);
  }
}

TEST_CASE("a cancelled timer never runs") {
  timer_queue timers;
  std::promise<void> ran;
  const auto id = timers.schedule(1h, [&] { ran.set_value(); });
  CHECK(timers.cancel(id));
  CHECK_FALSE(timers.cancel(id));
}
