#include "actors/detail/executors.hpp"

#include "actors/detail/promise_guard.hpp"

#include <mutex>
#include <optional>
#include <unordered_map>

namespace troupe {

namespace {

llm_result executor_crashed(const std::string& call_id) {
  return llm_result{
      call_id, error_info::of(error_type::executor_crashed, "the model executor stopped before the call finished")};
}

// A call still streaming. It holds its provider: an agent's own provider dies
// with the agent's spec, and the call's transfer, timers and callbacks live
// inside it. Members are destroyed in reverse order: the call before the
// provider it runs in.
struct running_call {
  std::shared_ptr<llm_provider> provider;
  std::unique_ptr<llm_call> call;
  promise_guard<llm_result> answer;
};

// Whether the result came before stream() returned (a provider with nothing
// to wait for, or a very fast one): then the request is answered at once,
// without a message to the executor.
struct call_progress {
  std::mutex mutex;
  bool returned = false;
  std::optional<llm_result> early;
};

struct llm_executor_state {
  static inline const char* name = "troupe.llm_executor";
  std::shared_ptr<runtime_context> ctx;
  std::unordered_map<std::string, running_call> calls;  // by call_id

  ~llm_executor_state() {
    for (auto& [id, c] : calls)
      if (c.call) c.call->cancel();
  }
};

using llm_executor_self = llm_executor_actor::stateful_pointer<llm_executor_state>;

llm_executor_actor::behavior_type llm_executor(llm_executor_self self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [self](exec_atom, const std::shared_ptr<const llm_stream>& request, const agent_actor& agent,
             const std::string& thread_id, std::shared_ptr<llm_provider> provider) -> caf::result<llm_result> {
        auto progress = std::make_shared<call_progress>();
        // Callbacks may run on the provider's threads: they only send messages.
        llm_callbacks callbacks{[agent, thread_id](llm_delta d) {
                                  caf::anon_send(agent, signal_atom::value, thread_id, signal{std::move(d)});
                                },
                                [progress, me = caf::actor_cast<llm_executor_actor>(self)](llm_result r) {
                                  std::unique_lock lock(progress->mutex);
                                  if (!progress->returned) {
                                    progress->early = std::move(r);
                                    return;
                                  }
                                  lock.unlock();
                                  caf::anon_send(me, done_atom::value, std::move(r));
                                }};
        std::unique_ptr<llm_call> call;
        try {
          call = provider->stream(*request, std::move(callbacks));
        } catch (const std::exception& e) {
          return llm_result{request->call_id, error_info::of(error_type::provider_failed, e.what(), 1)};
        }
        {
          std::lock_guard lock(progress->mutex);
          progress->returned = true;
          if (progress->early) return std::move(*progress->early);
        }
        auto promise = self->make_response_promise<llm_result>();
        self->state.calls[request->call_id] =
            running_call{std::move(provider), std::move(call),
                         promise_guard<llm_result>(promise, request->call_id, &executor_crashed)};
        return caf::delegated<llm_result>();
      },
      [self](cancel_atom, const std::string& call_id) {
        auto it = self->state.calls.find(call_id);
        if (it == self->state.calls.end()) return;
        if (it->second.call) it->second.call->cancel();
        it->second.answer.deliver(llm_result{call_id, error_info::of(error_type::cancelled, "the call was cancelled")});
        self->state.calls.erase(it);
      },
      [self](done_atom, llm_result& r) {
        auto it = self->state.calls.find(r.call_id);
        if (it == self->state.calls.end()) return;  // cancelled meanwhile
        it->second.answer.deliver(std::move(r));
        self->state.calls.erase(it);
      },
  };
}

}  // namespace

llm_executor_actor spawn_llm_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(llm_executor, std::move(ctx));
}

}  // namespace troupe
