#pragma once
// What an agent holds, asked of the agent actor itself: for tests that check
// memory and in-flight work from outside (needs CAF: actors tests only).

#include "support/runtime_harness.hpp"

#include "actors/detail/runtime_impl.hpp"

#include <chrono>
#include <functional>

namespace troupe::testing {

inline agent_stats stats_of(runtime& rt, const std::string& agent_id) {
  auto a = rt.internals().ctx->agents.find(agent_id);
  REQUIRE(a);
  caf::scoped_actor self{*rt.internals().system};
  agent_stats out;
  self->request(*a, patience, stats_atom::value)
      .receive([&](const agent_stats& s) { out = s; }, [](caf::error&) { FAIL("the agent did not answer"); });
  return out;
}

// Asks the agent until its stats satisfy `ready`; false if they never do
// within the test's patience. For states an actor reaches on its own, such
// as a signal parked behind a commit.
inline bool stats_become(runtime& rt, const std::string& agent_id,
                         const std::function<bool(const agent_stats&)>& ready) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < until)
    if (ready(stats_of(rt, agent_id))) return true;
  return false;
}

}  // namespace troupe::testing
