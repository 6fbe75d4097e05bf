#pragma once
// Brokers ask agents on behalf of the embedding program (see protocols.hpp):
// one request(...).then(...) per ask, whose answer, deadline or failure ends
// the request handle; they run its callbacks (a callback that throws ends the
// request with callback_failed and is reported, the broker carries on) and
// route its cancels behind its ask. A pool of them, by agent id, keeps the
// asks of one caller to one agent in order.

#include "actors/detail/runtime_context.hpp"

namespace troupe {

broker_actor spawn_broker(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace troupe
