#include "actors/detail/executors.hpp"

#include "actors/detail/promise_guard.hpp"
#include "runtime/clock.hpp"

#include <unordered_map>

namespace troupe {

namespace {

tool_result executor_crashed(const std::string& key) {
  // The key is call_id/tool_call_id; the agent matches results by both.
  const auto slash = key.find('/');
  return tool_result{
      key.substr(0, slash),
      key.substr(slash + 1),
      {},
      error_info::of(error_type::executor_crashed, "the tool executor stopped before the call finished")};
}

// One tool call being executed, across its attempts.
struct running_tool {
  std::shared_ptr<const tool_exec> exec;
  std::string thread_id;
  std::string agent_id;
  std::shared_ptr<const registered_tool> tool;
  promise_guard<tool_result> answer;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> stop_async;  // an asynchronous tool's way to stop early
  int attempt = 1;
  std::int64_t started_us = 0;

  void stop() {
    cancelled->store(true);
    if (stop_async) std::exchange(stop_async, {})();
  }
};

struct tool_executor_state {
  static inline const char* name = "troupe.tool_executor";
  std::shared_ptr<runtime_context> ctx;
  std::unordered_map<std::string, running_tool> running;  // by call_id + "/" + tool_call_id

  ~tool_executor_state() {
    for (auto& [key, r] : running) r.stop();
  }
};

using tool_executor_self = tool_executor_actor::stateful_pointer<tool_executor_state>;

std::string key_of(const std::string& call_id, const std::string& tool_call_id) { return call_id + "/" + tool_call_id; }

class tool_logic {
 public:
  explicit tool_logic(tool_executor_self self) : self_(self), st_(self->state) {}

  caf::result<tool_result> start(std::shared_ptr<const tool_exec> exec, std::string thread_id, std::string agent_id) {
    auto tool = st_.ctx->tools.find(exec->tool_name);
    if (!tool)  // the registry changed since the agent was configured
      return tool_result{
          exec->call_id, exec->tool_call_id, exec->tool_name,
          error_info::of(error_type::unknown_tool, "the tool \"" + exec->tool_name + "\" is no longer registered")};
    const std::string key = key_of(exec->call_id, exec->tool_call_id);
    const auto timeout =
        exec->timeout_ms > 0 ? std::chrono::milliseconds(exec->timeout_ms) : tool->definition().timeout;
    const bool inline_tool = !tool->definition().blocking && !tool->is_async();
    auto promise = self_->make_response_promise<tool_result>();
    running_tool& r = st_.running[key];
    r.exec = std::move(exec);
    r.thread_id = std::move(thread_id);
    r.agent_id = std::move(agent_id);
    r.tool = std::move(tool);
    r.answer = promise_guard<tool_result>(promise, key, &executor_crashed);
    r.started_us = steady_us();
    // An inline tool runs to its end within attempt(): no timer could stop it,
    // and arming one would wake the clock thread for every call.
    if (!inline_tool) self_->delayed_send(self_, timeout, timeout_atom::value, key);
    attempt(key);
    return caf::delegated<tool_result>();
  }

  void attempt(const std::string& key) {
    running_tool& r = st_.running.at(key);
    tool_context ctx{r.agent_id, r.thread_id, r.exec->request_id, r.exec->tool_call_id,
                     r.attempt,  r.cancelled, r.exec->traceparent};
    const auto me = caf::actor_cast<tool_executor_actor>(self_);
    const int n = r.attempt;
    if (r.tool->is_async()) {
      r.stop_async = r.tool->start_once(r.exec->arguments, ctx, [me, key, n](tool_outcome outcome) {
        caf::anon_send(me, done_atom::value, key, n, std::move(outcome), false);
      });
      return;
    }
    if (!r.tool->definition().blocking) {
      tool_attempt result = r.tool->run_once(r.exec->arguments, ctx);
      finish(key, n, std::move(result));
      return;
    }
    auto job = [tool = r.tool, exec = r.exec, ctx = std::move(ctx), me, key, n] {
      tool_attempt result = tool->run_once(exec->arguments, ctx);
      caf::anon_send(me, done_atom::value, key, n, std::move(result.outcome), result.retryable);
    };
    if (!st_.ctx->workers->submit(std::move(job)))
      finish(key, n,
             tool_attempt{error_info::of(error_type::overloaded, "every tool worker is busy and the queue is full", n),
                          true});
  }

  void finish(const std::string& key, int attempt_number, tool_attempt result) {
    auto it = st_.running.find(key);
    if (it == st_.running.end() || it->second.attempt != attempt_number) return;  // timed out or cancelled
    running_tool& r = it->second;
    r.stop_async = {};
    const bool failed = std::holds_alternative<error_info>(result.outcome);
    const retry_policy& policy = r.tool->definition().retry;
    if (failed && result.retryable && r.attempt < policy.max_attempts) {
      ++r.attempt;
      st_.ctx->emit(telemetry_kind::tool_retry, [&] {
        return telemetry_event{telemetry_kind::tool_retry,
                               r.agent_id,
                               r.thread_id,
                               r.exec->request_id,
                               r.exec->call_id,
                               r.exec->tool_call_id,
                               r.exec->iteration,
                               0,
                               r.exec->tool_name + ": " + std::get<error_info>(result.outcome).message};
      });
      self_->delayed_send(self_, policy.backoff_before(r.attempt), retry_atom::value, key, r.attempt);
      return;
    }
    answer(it, std::move(result.outcome));
  }

  void timed_out(const std::string& key) {
    auto it = st_.running.find(key);
    if (it == st_.running.end()) return;
    running_tool& r = it->second;
    r.stop();
    const std::int64_t took_us = steady_us() - r.started_us;
    st_.ctx->emit(telemetry_kind::tool_timeout, [&] {
      return telemetry_event{
          telemetry_kind::tool_timeout, r.agent_id,        r.thread_id, r.exec->request_id, r.exec->call_id,
          r.exec->tool_call_id,         r.exec->iteration, took_us,     r.exec->tool_name};
    });
    answer(it, error_info::of(error_type::timeout,
                              "the tool did not finish within " + std::to_string(took_us / 1000) + " ms", r.attempt));
  }

  void cancel(const std::string& key) {
    auto it = st_.running.find(key);
    if (it == st_.running.end()) return;
    it->second.stop();
    answer(it, error_info::of(error_type::cancelled, "the tool call was cancelled"));
  }

 private:
  void answer(std::unordered_map<std::string, running_tool>::iterator it, tool_outcome outcome) {
    const tool_exec& x = *it->second.exec;
    it->second.answer.deliver(tool_result{x.call_id, x.tool_call_id, x.tool_name, std::move(outcome)});
    st_.running.erase(it);
  }

  tool_executor_self self_;
  tool_executor_state& st_;
};

tool_executor_actor::behavior_type tool_executor(tool_executor_self self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [self](exec_atom, std::shared_ptr<const tool_exec> exec, std::string thread_id,
             std::string agent_id) -> caf::result<tool_result> {
        return tool_logic(self).start(std::move(exec), std::move(thread_id), std::move(agent_id));
      },
      [self](done_atom, const std::string& key, int attempt, tool_outcome& outcome, bool retryable) {
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

tool_executor_actor spawn_tool_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(tool_executor, std::move(ctx));
}

}  // namespace troupe
