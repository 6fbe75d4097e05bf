#include "runtime/scripted_provider.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>

using namespace troupe;

namespace {
struct collector {
  std::mutex m;
  std::condition_variable cv;
  std::vector<llm_delta> deltas;
  std::optional<llm_result> result;

  llm_callbacks callbacks() {
    return {[this](llm_delta d) {
              std::lock_guard lock(m);
              deltas.push_back(std::move(d));
            },
            [this](llm_result r) {
              {
                std::lock_guard lock(m);
                result = std::move(r);
              }
              cv.notify_all();
            }};
  }
  bool wait() {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return result.has_value(); });
  }
};
llm_stream request(std::string call_id) {
  llm_stream s;
  s.call_id = std::move(call_id);
  return s;
}
}  // namespace

TEST_CASE("the scripted provider replays its script") {
  scripted_reply streamed;
  streamed.chunks = {"Hel", "lo"};
  streamed.usage = token_usage{3, 2};
  scripted_provider p({streamed, scripted_reply::failure({"server", "boom", 500, 1, {}})});

  collector first;
  CHECK(p.stream(request("c1"), first.callbacks()) == nullptr);  // finished at once
  REQUIRE(first.result);
  CHECK(first.deltas.size() == 2);
  CHECK(first.deltas[1].text == "lo");
  const auto& c = std::get<llm_completion>(first.result->outcome);
  CHECK(c.text == "Hello");
  CHECK(c.usage == token_usage{3, 2});
  CHECK(first.result->call_id == "c1");

  collector second;
  p.stream(request("c2"), second.callbacks());
  CHECK(std::get<error_info>(second.result->outcome).type == "server");

  collector third;
  p.stream(request("c3"), third.callbacks());
  CHECK(std::get<error_info>(third.result->outcome).type == "script_exhausted");
  CHECK(p.calls() == 3);
}

TEST_CASE("a delayed scripted reply arrives later, or never once cancelled") {
  scripted_reply slow = scripted_reply::text("late");
  slow.delay = std::chrono::milliseconds(1);
  scripted_reply never = scripted_reply::text("never");
  never.delay = std::chrono::minutes(10);
  scripted_provider p({slow, never});

  collector a;
  auto call = p.stream(request("c1"), a.callbacks());
  REQUIRE(call);
  REQUIRE(a.wait());
  CHECK(std::get<llm_completion>(a.result->outcome).text == "late");

  collector b;
  auto pending = p.stream(request("c2"), b.callbacks());
  REQUIRE(pending);
  CHECK(b.deltas.size() == 1);  // deltas go out at once
  pending->cancel();
  CHECK(!b.result);
}
