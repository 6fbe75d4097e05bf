#pragma once
// The atoms and message types the actors exchange. All messages stay within
// one process, so troupe's value types travel as they are (CAF's "unsafe"
// local message types) instead of being serialised.

#include "actors/agent_spec.hpp"
#include "actors/stream_event.hpp"
#include "directives/directive.hpp"
#include "runtime/llm/llm_provider.hpp"
#include "signals/signal.hpp"
#include "strategy/react_config.hpp"
#include "strategy/thread.hpp"

#include <caf/all.hpp>

#include <memory>

namespace troupe {

using ask_atom = caf::atom_constant<caf::atom("ask")>;
using signal_atom = caf::atom_constant<caf::atom("signal")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using reply_atom = caf::atom_constant<caf::atom("reply")>;
using exec_atom = caf::atom_constant<caf::atom("exec")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using forget_atom = caf::atom_constant<caf::atom("forget")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;

}  // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::signal)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::llm_stream)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::tool_exec)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::tool_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::thread_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::stream_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::agent_spec>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<troupe::llm_provider>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::react_config>)
