#include "runtime/llm/scripted_provider.hpp"

namespace troupe {

scripted_reply scripted_reply::text(std::string answer, std::optional<token_usage> u) {
  scripted_reply r;
  r.chunks.push_back(std::move(answer));
  r.usage = u;
  return r;
}

scripted_reply scripted_reply::tools(std::vector<tool_call> calls, std::optional<token_usage> u) {
  scripted_reply r;
  r.tool_calls = std::move(calls);
  r.usage = u;
  return r;
}

scripted_reply scripted_reply::failure(error_info e) {
  scripted_reply r;
  r.error = std::move(e);
  return r;
}

llm_result to_llm_result(const std::string& call_id, const scripted_reply& r) {
  if (r.error) return {call_id, *r.error};
  llm_completion c;
  for (const auto& chunk : r.chunks) c.text += chunk;
  c.thinking = r.thinking;
  c.tool_calls = r.tool_calls;
  c.usage = r.usage;
  c.finish_reason = r.tool_calls.empty() ? "stop" : "tool_calls";
  return {call_id, std::move(c)};
}

scripted_provider::scripted_provider(std::vector<scripted_reply> replies) : replies_(std::move(replies)) {}

scripted_provider::scripted_provider(script_fn fn) : fn_(std::move(fn)) {}

scripted_reply scripted_provider::next_reply(const llm_stream& request) {
  if (fn_) return fn_(request);
  std::lock_guard lock(mutex_);
  if (next_ < replies_.size()) return replies_[next_++];
  return scripted_reply::failure(error_info::of(error_type::script_exhausted,
                                                "the scripted model has no reply left for call " + request.call_id, 1));
}

timer_queue& scripted_provider::timers() {
  std::call_once(timers_started_, [this] { timers_ = std::make_unique<timer_queue>(); });
  return *timers_;
}

namespace {

class delayed_call final : public llm_call {
 public:
  delayed_call(timer_queue& timers, std::uint64_t id) : timers_(timers), id_(id) {}
  void cancel() override { timers_.cancel(id_); }

 private:
  timer_queue& timers_;
  std::uint64_t id_;
};

}  // namespace

std::unique_ptr<llm_call> scripted_provider::stream(const llm_stream& request, llm_callbacks callbacks) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  scripted_reply reply = next_reply(request);
  if (!reply.error) {
    for (const auto& chunk : reply.chunks)
      if (callbacks.on_delta) callbacks.on_delta(llm_delta{request.call_id, chunk, ""});
    if (!reply.thinking.empty() && callbacks.on_delta)
      callbacks.on_delta(llm_delta{request.call_id, "", reply.thinking});
  }
  llm_result result = to_llm_result(request.call_id, reply);
  if (reply.delay.count() == 0) {
    callbacks.on_result(std::move(result));
    return nullptr;
  }
  auto id = timers().schedule(reply.delay, [on_result = std::move(callbacks.on_result),
                                            result = std::move(result)]() mutable { on_result(std::move(result)); });
  return std::make_unique<delayed_call>(timers(), id);
}

}  // namespace troupe
