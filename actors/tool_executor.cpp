#include "actors/executors.hpp"

#include "runtime/clock.hpp"

#include <unordered_map>

namespace troupe {

namespace {

// One tool call being executed, across its attempts.
struct running_tool {
  tool_exec exec;
  caf::actor agent;
  std::string thread_id;
  std::string agent_id;
  std::shared_ptr<const registered_tool> tool;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  int attempt = 1;
  std::int64_t started_us = 0;
};

struct tool_executor_state {
  static inline const char* name = "troupe.tool_executor";
  std::shared_ptr<runtime_context> ctx;
  std::unordered_map<std::string, running_tool> running;  // by call_id + "/" + tool_call_id

  ~tool_executor_state() {
    for (auto& [key, r] : running) r.cancelled->store(true);
  }
};

using tool_executor_self = caf::stateful_actor<tool_executor_state>;

std::string key_of(const std::string& call_id, const std::string& tool_call_id) {
  return call_id + "/" + tool_call_id;
}

class tool_logic {
 public:
  explicit tool_logic(tool_executor_self* self) : self_(self), st_(self->state) {}

  void start(tool_exec exec, caf::actor agent, std::string thread_id, std::string agent_id) {
    const std::string key = key_of(exec.call_id, exec.tool_call_id);
    auto tool = st_.ctx->tools.find(exec.tool_name);
    if (!tool) {
      // The registry changed since the agent was configured.
      self_->send(agent, signal_atom::value, thread_id,
                  signal{tool_result{exec.call_id, exec.tool_call_id, exec.tool_name,
                                     error_info::of(error_type::unknown_tool, "the tool \"" + exec.tool_name + "\" is no longer registered")}});
      return;
    }
    const auto timeout = exec.timeout_ms > 0 ? std::chrono::milliseconds(exec.timeout_ms)
                                             : tool->definition().timeout;
    running_tool& r = st_.running[key];
    r = running_tool{std::move(exec), std::move(agent), std::move(thread_id), std::move(agent_id),
                     std::move(tool)};
    r.started_us = steady_us();
    // An inline tool runs to its end within attempt(): no timer could stop it,
    // and arming one would wake the clock thread for every call.
    if (r.tool->definition().blocking) self_->delayed_send(self_, timeout, timeout_atom::value, key);
    attempt(key);
  }

  void attempt(const std::string& key) {
    running_tool& r = st_.running.at(key);
    tool_context ctx{r.agent_id, r.thread_id, r.exec.request_id, r.exec.tool_call_id, r.attempt,
                     r.cancelled};
    if (!r.tool->definition().blocking) {
      tool_attempt result = r.tool->run_once(r.exec.arguments, ctx);
      finish(key, r.attempt, std::move(result));
      return;
    }
    auto job = [tool = r.tool, args = r.exec.arguments, ctx = std::move(ctx),
                me = caf::actor_cast<caf::actor>(self_), key, n = r.attempt] {
      tool_attempt result = tool->run_once(args, ctx);
      caf::anon_send(me, done_atom::value, key, n, std::move(result.outcome), result.retryable);
    };
    if (!st_.ctx->workers->submit(std::move(job)))
      finish(key, r.attempt,
             tool_attempt{error_info::of(error_type::overloaded, "every tool worker is busy and the queue is full", r.attempt),
                          true});
  }

  void finish(const std::string& key, int attempt_number, tool_attempt result) {
    auto it = st_.running.find(key);
    if (it == st_.running.end() || it->second.attempt != attempt_number) return;  // timed out or cancelled
    running_tool& r = it->second;
    const bool failed = std::holds_alternative<error_info>(result.outcome);
    const retry_policy& policy = r.tool->definition().retry;
    if (failed && result.retryable && r.attempt < policy.max_attempts) {
      ++r.attempt;
      st_.ctx->emit(telemetry_kind::tool_retry, [&] {
      return telemetry_event{telemetry_kind::tool_retry, r.agent_id, r.thread_id, r.exec.request_id,
                     r.exec.call_id, r.exec.tool_call_id, r.exec.iteration, 0,
                     r.exec.tool_name + ": " + std::get<error_info>(result.outcome).message};
    });
      self_->delayed_send(self_, policy.backoff_before(r.attempt), retry_atom::value, key, r.attempt);
      return;
    }
    self_->send(r.agent, signal_atom::value, r.thread_id,
                signal{tool_result{r.exec.call_id, r.exec.tool_call_id, r.exec.tool_name,
                                   std::move(result.outcome)}});
    st_.running.erase(it);
  }

  void timed_out(const std::string& key) {
    auto it = st_.running.find(key);
    if (it == st_.running.end()) return;
    running_tool& r = it->second;
    r.cancelled->store(true);
    const auto ms = (steady_us() - r.started_us) / 1000;
    st_.ctx->emit(telemetry_kind::tool_timeout, [&] {
      return telemetry_event{telemetry_kind::tool_timeout, r.agent_id, r.thread_id, r.exec.request_id,
                   r.exec.call_id, r.exec.tool_call_id, r.exec.iteration, steady_us() - r.started_us,
                   r.exec.tool_name};
    });
    self_->send(r.agent, signal_atom::value, r.thread_id,
                signal{tool_result{r.exec.call_id, r.exec.tool_call_id, r.exec.tool_name,
                                   error_info::of(error_type::timeout, "the tool did not finish within " + std::to_string(ms) + " ms", r.attempt)}});
    st_.running.erase(it);
  }

  void cancel(const std::string& key) {
    auto it = st_.running.find(key);
    if (it == st_.running.end()) return;
    it->second.cancelled->store(true);
    st_.running.erase(it);
  }

 private:
  tool_executor_self* self_;
  tool_executor_state& st_;
};

caf::behavior tool_executor(tool_executor_self* self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [self](exec_atom, tool_exec exec, caf::actor agent, std::string thread_id, std::string agent_id) {
        tool_logic(self).start(std::move(exec), std::move(agent), std::move(thread_id), std::move(agent_id));
      },
      [self](done_atom, const std::string& key, int attempt, tool_outcome outcome, bool retryable) {
        tool_logic(self).finish(key, attempt, tool_attempt{std::move(outcome), retryable});
      },
      [self](retry_atom, const std::string& key, int attempt) {
        auto it = self->state.running.find(key);
        if (it != self->state.running.end() && it->second.attempt == attempt) tool_logic(self).attempt(key);
      },
      [self](timeout_atom, const std::string& key) { tool_logic(self).timed_out(key); },
      [self](cancel_atom, const std::string& call_id, const std::string& tool_call_id) {
        tool_logic(self).cancel(key_of(call_id, tool_call_id));
      },
  };
}

}  // namespace

caf::actor spawn_tool_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(tool_executor, std::move(ctx));
}

}  // namespace troupe
