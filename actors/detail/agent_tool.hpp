#pragma once
// A tool whose call asks another agent: its "question" argument becomes
// that agent's query and the answer the call's result, a pause of that agent
// for a person the call's pause (strategy/inner_pause.hpp). How the agent is
// reached is the caller's: in this runtime (runtime::add_agent_tool) or
// wherever a cluster runs it (cluster_node::add_agent_tool).

#include "actors/detail/agent_answer.hpp"
#include "actors/runtime.hpp"
#include "runtime/tools/tool.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace troupe::detail {

// Asks the agent; throws tool_failure when it cannot be asked at all.
using agent_asker = std::function<request(std::string question, ask_options options)>;

// `decide_elsewhere` (tool::decide_elsewhere): how decisions passed down
// reach the agent when it runs elsewhere; null for an agent of this runtime.
inline tool agent_tool(std::string tool_name, std::string agent_id, std::string description,
                       std::chrono::milliseconds timeout, agent_asker ask,
                       decltype(tool::decide_elsewhere) decide_elsewhere = {}) {
  tool t;
  t.spec = tool_spec{
      std::move(tool_name), std::move(description),
      boost::json::object{{"type", "object"},
                          {"properties", {{"question", {{"type", "string"}, {"description", "What to ask."}}}}},
                          {"required", boost::json::array{"question"}}}};
  t.spec.relays_approvals = true;
  t.timeout = timeout;
  t.retry.max_attempts = 1;
  t.decide_elsewhere = std::move(decide_elsewhere);
  // No thread waits for the answer (the tool is asynchronous), so nested
  // agents never starve the tool workers.
  t.start = [ask = std::move(ask), agent_id = std::move(agent_id)](
                const boost::json::object& args, const tool_context& ctx, tool_finish finish) -> std::function<void()> {
    ask_options o;
    o.thread_id = ctx.agent_id + "->" + agent_id;  // one conversation per calling agent
    o.traceparent = ctx.traceparent;               // the other agent's request is a child of this tool call
    // A paused request's handle hears again if it is cancelled through it;
    // the call has its result by then.
    o.on_reply = [agent_id, thread_id = o.thread_id, finish,
                  once = std::make_shared<std::atomic<bool>>(false)](const reply& answer) {
      if (!once->exchange(true)) finish(agent_answer_outcome(agent_id, thread_id, answer));
    };
    request r = ask(std::string(args.at("question").as_string()), std::move(o));
    return [r] { r.cancel("the calling tool call ended"); };
  };
  return t;
}

}  // namespace troupe::detail
