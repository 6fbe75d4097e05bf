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

// The entries of `thread_id` whose refs.request_id is `request_id`, from
// the agent (or from the store once the agent has stopped).
std::optional<std::size_t> entries_of_request(deployment& agents, const deployed_agent& a, const std::string& thread_id,
                                              const std::string& request_id);

}  // namespace troupe::serve
