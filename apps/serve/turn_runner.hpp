#pragma once
// Asks an agent for a registered turn and tells the turn what happens: the
// agent's stream events become the turn's SSE events; its end is completed
// off the runtime's threads (the entries the turn appended are counted from
// the thread), then the registry and the observers hear of it. A keyed
// turn whose request already runs elsewhere (another node's ask runs it)
// follows that request through the store instead of ending refused.

#include "apps/serve/deployment.hpp"
#include "apps/serve/observer.hpp"
#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn_registry.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace troupe::serve {

struct turn_context {
  deployment& agents;
  turn_registry& turns;
  const observer_list& observers;
  boost::asio::thread_pool& workers;
  // Set while the server drains: the turns it follows end with shutdown.
  const std::atomic<bool>& stopping;
  // How long a lost node's shard takes to move (the cluster's dead_after).
  std::chrono::milliseconds dead_after;
};

void run_turn(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a);

// A turn another node runs (or ran, and died running), unended in its
// thread as `so_far` shows it (nullopt: nothing of it committed yet),
// followed through the store to its end (turn_follower.hpp) and asked
// again as a retry every dead_after meanwhile, so that it goes on if its
// node dies with it; it gives up past the agent's deadline and the time a
// lost node's shard takes to move. `ids` names the agent.
std::shared_ptr<turn> follow_elsewhere(turn_context& ctx, const deployed_agent& a, const turn_ids& ids,
                                       const std::optional<replayed_turn>& so_far);
// Asks the turn's request again as a retry, answered by nobody: what it
// does reaches whoever follows the turn through the store.
void ask_again(const deployed_agent& a, const turn_ids& ids);

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
