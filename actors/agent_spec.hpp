#pragma once
// What an agent is made from. Plain data: build one, hand it to
// runtime::spawn_agent, and the supervisor keeps it to restart the agent.

#include "context/context_policy.hpp"
#include "runtime/llm/llm_provider.hpp"
#include "signals/generation_params.hpp"
#include "strategy/approval_rule.hpp"

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

// As OTP's child restart values: a permanent agent is always restarted when
// it stops, a transient one only when it crashed, a temporary one never.
enum class restart_policy { permanent, transient, temporary };

struct agent_spec {
  std::string id{};  // unique within the runtime; empty: one is made up
  std::string model{};
  std::string system_prompt{};
  std::vector<std::string> tools{};  // names in the runtime's tool registry
  int max_iterations = 10;
  generation_params params{};
  // Overrides every tool's own timeout when set.
  std::chrono::milliseconds tool_timeout{0};
  std::size_t max_queued_asks = 64;  // per thread, beyond the running one
  // A request still running this long after its ask ends with
  // deadline_exceeded (and is cancelled); ask_options::deadline overrides it.
  std::chrono::milliseconds request_deadline{std::chrono::minutes(10)};
  // Idle threads are unloaded (the store keeps them; the next ask loads them
  // again) beyond this many per agent, or after this long unused.
  std::size_t max_loaded_threads = 10'000;
  std::chrono::milliseconds thread_idle_timeout{std::chrono::minutes(30)};
  std::size_t max_parallel_tools = 8;  // tool calls of one model turn running at once
  restart_policy restart = restart_policy::transient;
  context_policy context{};                  // how each call's context is cut from the thread
  std::string summary_model{};               // empty: the agent's model
  std::shared_ptr<llm_provider> provider{};  // null: the runtime's provider
  // Tools whose calls wait for a person, by tool name (one of `tools`): a
  // request pauses with them (reply::paused) until agent::decide. Here and
  // not in the tool: who must approve what is the deployment's policy for
  // this agent, and one registered tool may be free for one agent and
  // supervised for another.
  std::map<std::string, approval_rule, std::less<>> approvals{};
};

// The thread an ask without a thread_id goes to.
inline std::string default_thread_of(const std::string& agent_id) { return agent_id + ":default"; }

}  // namespace troupe
