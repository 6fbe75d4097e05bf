#pragma once
// A turn that another node of a cluster runs (or ran, and died running),
// followed through the store the nodes share: a client that reconnects to
// any node gets the turn's events as its thread records them, entry by
// entry (the other node's streamed deltas never reach this one: each
// assistant message comes whole, as a replay tells it), under the ids they
// had live (event_position.hpp), read again every `poll` until the turn's
// end is committed. Past `give_up` without an end, the turn ends with
// turn_incomplete (the turn is asked again as a retry meanwhile, so this
// is a request that could not go on anywhere).

#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn.hpp"

#include "runtime/store/open_store.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

namespace troupe::serve {

struct follow_options {
  std::chrono::milliseconds poll{200};
  std::chrono::steady_clock::time_point give_up;
  // Set (the server drains): the turn ends at the next poll with shutdown,
  // as the turns the server runs do, so that its client reconnects
  // elsewhere; a poll still pending would hold the workers' join.
  const std::atomic<bool>* stopping = nullptr;
  // Called every `ask_again_every` while the turn has not ended: the node
  // that runs the turn may die with it, and then nothing would end it
  // before `give_up`. Asked again as a retry, it goes on wherever its agent
  // runs now; while it still runs, the holder refuses the repeat.
  std::function<void()> ask_again;
  std::chrono::milliseconds ask_again_every{0};
};

// `so_far` is the turn as the store held it when the reconnect came (not
// ended). The store and `stopping` must outlive the workers' last run of the poll.
std::shared_ptr<turn> follow_stored_turn(boost::asio::thread_pool& workers, const store_handle& store,
                                         const std::string& conversation_id, turn_ids ids, const replayed_turn& so_far,
                                         follow_options options);

}  // namespace troupe::serve
