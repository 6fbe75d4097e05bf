#pragma once
// Asks an agent for a registered turn and tells the turn what happens: the
// agent's stream events become the turn's SSE events; its end is completed
// off the runtime's threads (the entries the turn appended are counted from
// the thread), then the registry and the observers hear of it.

#include "apps/serve/deployment.hpp"
#include "apps/serve/observer.hpp"
#include "apps/serve/turn_registry.hpp"

#include <boost/asio/thread_pool.hpp>

#include <memory>

namespace troupe::serve {

struct turn_context {
  deployment& agents;
  turn_registry& turns;
  const observer_list& observers;
  boost::asio::thread_pool& workers;
};

void run_turn(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a);

// How many entries of `thread_id` have `request_id` as their
// refs.request_id, and the last one's seq, from the agent (or from the store
// once the agent has stopped).
struct request_extent {
  std::size_t entries = 0;
  std::optional<std::uint64_t> last_seq;
};
std::optional<request_extent> entries_of_request(deployment& agents, const deployed_agent& a,
                                                 const std::string& thread_id, const std::string& request_id);

}  // namespace troupe::serve
