#include "actors/executors.hpp"

#include <mutex>
#include <unordered_map>

namespace troupe {

namespace {

struct llm_executor_state {
  static inline const char* name = "troupe.llm_executor";
  std::shared_ptr<runtime_context> ctx;
  // Calls still streaming, by call_id, so they can be cancelled.
  std::unordered_map<std::string, std::unique_ptr<llm_call>> calls;

  ~llm_executor_state() {
    for (auto& [id, call] : calls) call->cancel();
  }
};

using llm_executor_self = caf::stateful_actor<llm_executor_state>;

caf::behavior llm_executor(llm_executor_self* self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [self](exec_atom, const llm_stream& request, const caf::actor& agent,
             const std::string& thread_id, const std::shared_ptr<llm_provider>& provider) {
        const std::string call_id = request.call_id;
        // Whether the call outlived stream(): only then does the executor keep
        // its handle, and only then must the result tell it to let go.
        struct progress {
          std::mutex mutex;
          bool returned = false;
          bool finished = false;
        };
        auto state = std::make_shared<progress>();
        // Callbacks may run on the provider's threads: they only send messages.
        llm_callbacks callbacks{
            [agent, thread_id](llm_delta d) {
              caf::anon_send(agent, signal_atom::value, thread_id, signal{std::move(d)});
            },
            [agent, thread_id, state, me = caf::actor_cast<caf::actor>(self)](llm_result r) {
              const std::string id = r.call_id;
              caf::anon_send(agent, signal_atom::value, thread_id, signal{std::move(r)});
              std::lock_guard lock(state->mutex);
              state->finished = true;
              if (state->returned) caf::anon_send(me, forget_atom::value, id);
            }};
        std::unique_ptr<llm_call> call;
        try {
          call = provider->stream(request, std::move(callbacks));
        } catch (const std::exception& e) {
          self->send(agent, signal_atom::value, thread_id,
                     signal{llm_result{call_id, error_info::of(error_type::provider_failed, e.what(), 1)}});
          return;
        }
        std::lock_guard lock(state->mutex);
        state->returned = true;
        if (call && !state->finished) self->state.calls[call_id] = std::move(call);
      },
      [self](cancel_atom, const std::string& call_id, const std::string&) {
        auto it = self->state.calls.find(call_id);
        if (it == self->state.calls.end()) return;
        it->second->cancel();
        self->state.calls.erase(it);
      },
      [self](forget_atom, const std::string& call_id) { self->state.calls.erase(call_id); },
  };
}

}  // namespace

caf::actor spawn_llm_executor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(llm_executor, std::move(ctx));
}

}  // namespace troupe
