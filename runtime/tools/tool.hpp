#pragma once
// A tool an agent can call: what the model sees (its spec) and the function
// that runs it, with its timeout, retry policy and whether it blocks.

#include "directives/reply.hpp"
#include "directives/tool_spec.hpp"
#include "signals/decision.hpp"
#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace troupe {

// What a running tool knows about its call.
struct tool_context {
  std::string agent_id;
  std::string thread_id;
  std::string request_id;
  std::string tool_call_id;
  int attempt = 1;
  // Set when the call is cancelled or timed out; long-running tools should
  // check it and return early.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // The W3C traceparent of this call's span when it is traced, else empty:
  // a tool that calls a server (MCP, HTTP) sends it as the `traceparent`
  // header, so the server's spans join the agent's trace.
  std::string traceparent{};

  bool is_cancelled() const { return cancelled && cancelled->load(std::memory_order_relaxed); }
};

// Thrown by a tool to report a typed error the model will see. A retryable
// failure is tried again, with backoff, as the tool's retry policy allows.
struct tool_failure : std::runtime_error {
  tool_failure(std::string type, const std::string& message, bool retryable = false)
      : std::runtime_error(message), type(std::move(type)), retryable(retryable) {}
  std::string type;
  bool retryable;
};

struct retry_policy {
  int max_attempts = 3;  // including the first
  std::chrono::milliseconds initial_backoff{100};
  double multiplier = 2.0;
  std::chrono::milliseconds max_backoff{5'000};

  std::chrono::milliseconds backoff_before(int attempt) const;  // attempt >= 2
};

using tool_function = std::function<boost::json::value(const boost::json::object& arguments, const tool_context&)>;

// A tool whose work answers by itself later (another agent, a remote
// server): it starts the work, returns at once, and `finish` is called with
// the outcome, once, from any thread. No thread waits meanwhile. It returns
// what stops the work early (on a timeout or cancel), or an empty function.
using tool_finish = std::function<void(tool_outcome)>;
using async_tool_function =
    std::function<std::function<void()>(const boost::json::object& arguments, const tool_context&, tool_finish finish)>;

struct tool {
  tool_spec spec;
  tool_function run;          // set this one...
  async_tool_function start;  // ...or this one
  std::chrono::milliseconds timeout{30'000};
  retry_policy retry;
  // A tool that may block (I/O, sleeping, waiting on another agent) runs on
  // the runtime's worker pool; a quick pure one runs on a tool executor.
  bool blocking = true;
  // For a tool that asks another agent and relays its pauses
  // (spec.relays_approvals): how a decision taken here for one of that
  // agent's calls reaches it when it does not run in this runtime (an agent
  // of a cluster that another node holds). `answered` is called once, on
  // any thread, with that agent's reply to the decision. Null: the decision
  // finds no agent there.
  std::function<void(const std::string& agent_id, const std::string& thread_id, decision d,
                     std::function<void(const reply&)> answered)>
      decide_elsewhere{};
};

}  // namespace troupe
