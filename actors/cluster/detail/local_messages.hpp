#pragma once
// Messages between a node's own actors: the node facade, its gateway and its
// links. None is registered with add_message_type, on purpose. CAF 0.17
// delivers any copyable type inside a process, but a message from another
// node names the types of its elements, and a receiver that knows no such
// name drops the message. So no other node can send one of these, whatever
// it knows: the control of a node's actors stays in its process, and the
// atoms of wire.hpp are for the wire only.

#include "actors/cluster/detail/wire.hpp"
#include "actors/detail/request_state.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace troupe::local {

// --- to the gateway ----------------------------------------------------------

// The node closes: tell every caller node_lost, cancel what runs; the
// reply (true) comes once nothing runs any more.
struct gateway_close {};

// The gateway ends (the actor system is about to go).
struct gateway_stop {};

// How many requests it runs for other nodes (replied as a std::size_t).
struct count_requests {};

// The request `key` of `caller` sent its end (from the runtime's callback):
// a pause (kept for a cancel), or its last reply; `decided` for a decision
// the agent took (it ends the pauses of its request).
struct request_ended {
  caf::actor_addr caller;
  std::uint64_t key = 0;
  bool paused = false;
  bool decided = false;
};

// The actor that proved itself as `caller` is gone, or its connection is.
struct caller_gone {
  caf::actor_addr caller;
};

// --- to a link ---------------------------------------------------------------

// An ask or a decide for the node at the link's address.
struct link_ask {
  wire::ask_envelope envelope;
  std::shared_ptr<request::state> state;
};

// The caller cancels the request `key`.
struct link_cancel {
  std::uint64_t key = 0;
  std::string reason;
};

// The link's own timer: the earliest deadline (and its grace) is due.
struct link_deadline {};

// The gateway the link talked to is gone (its proxy ended: the connection
// dropped, or that actor did).
struct gateway_lost {
  caf::actor_addr gateway;
  caf::error reason;
};

// The node closes: every request ends with shutdown and the link ends.
struct link_close {};

// The node took the link out of its table (it sends it nothing more): it
// ends once the requests it carries ended.
struct link_retire {};

}  // namespace troupe::local

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::gateway_close)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::gateway_stop)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::count_requests)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::request_ended)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::caller_gone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::link_ask)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::link_cancel)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::link_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::gateway_lost)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::link_close)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::local::link_retire)
