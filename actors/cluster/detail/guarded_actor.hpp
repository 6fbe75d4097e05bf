#pragma once
// The actor class of the gateway and the links: the two a node's peers can
// address. CAF 0.17 lets any connected node send them CAF's own system
// messages, and acts on those before any handler of ours: an exit_msg with
// exit_reason::kill ends an actor whatever its exit handler, a down_msg
// runs the down handler, an asynchronous error ends the actor by default.
// A message that comes over the network cannot be told apart from a local
// one by its sender either (a routed message names any source node and
// actor, this node's own included). These actors are neither linked nor
// monitor anything (they watch other actors with attach_functor and
// local-only messages), so every such message is dropped, wherever it
// comes from; a response (which may carry an error) still goes to the
// request that waits for it.

#include <caf/all.hpp>

namespace troupe {

template <class State>
class guarded_actor : public caf::stateful_actor<State> {
 public:
  using caf::stateful_actor<State>::stateful_actor;
  using caf::stateful_actor<State>::enqueue;

  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* host) override {
    if (ptr && !ptr->mid.is_response()) {
      const auto& content = ptr->content();
      if (content.match_elements<caf::exit_msg>() || content.match_elements<caf::down_msg>() ||
          content.match_elements<caf::error>())
        return;
    }
    caf::stateful_actor<State>::enqueue(std::move(ptr), host);
  }
};

// Their default handler: whatever no handler takes (a peer's guess at a
// message) is dropped without a word. CAF would print each one and answer
// it with an error, which ends a sender that does not guard itself; a
// request still hears that it was not understood.
inline caf::result<caf::message> ignore_unexpected(caf::scheduled_actor* self, caf::message_view&) {
  if (self->current_message_id().is_request()) return caf::sec::unexpected_message;
  return caf::delegated<caf::message>{};
}

}  // namespace troupe
