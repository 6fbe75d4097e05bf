#include "runtime/llm/scripted_provider.hpp"

#include <catch2/catch.hpp>

#include "support/llm_call_probe.hpp"

#include <condition_variable>
#include <mutex>

using namespace troupe;
using namespace troupe::testing;

namespace {
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

  llm_call_probe first;
  CHECK(p.stream(request("c1"), first.callbacks()) == nullptr);  // finished at once
  REQUIRE(first.result);
  CHECK(first.deltas.size() == 2);
  CHECK(first.deltas[1].text == "lo");
  const auto& c = std::get<llm_completion>(first.result->outcome);
  CHECK(c.text == "Hello");
  CHECK(c.usage == token_usage{3, 2});
  CHECK(first.result->call_id == "c1");

  llm_call_probe second;
  p.stream(request("c2"), second.callbacks());
  CHECK(std::get<error_info>(second.result->outcome).type == "server");

  llm_call_probe third;
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

  llm_call_probe a;
  auto call = p.stream(request("c1"), a.callbacks());
  REQUIRE(call);
  a.wait();
  CHECK(std::get<llm_completion>(a.result->outcome).text == "late");

  llm_call_probe b;
  auto pending = p.stream(request("c2"), b.callbacks());
  REQUIRE(pending);
  CHECK(b.deltas.size() == 1);  // deltas go out at once
  pending->cancel();
  CHECK(!b.result);
}
