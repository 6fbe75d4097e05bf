#pragma once
// A model that answers from a script, so the whole agent loop runs offline and
// deterministically: tests, examples, simulations and benchmarks.

#include "runtime/llm/llm_provider.hpp"
#include "runtime/net/timer_queue.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct scripted_reply {
  std::vector<std::string> chunks;  // streamed as deltas; the answer is their concatenation
  std::string thinking;
  std::vector<tool_call> tool_calls;  // non-empty: the model calls tools
  std::optional<error_info> error;    // set: the call fails with it
  std::optional<token_usage> usage;
  // Deltas go out at once; the result after this long. Cancelling the call
  // before then means no result at all.
  std::chrono::milliseconds delay{0};

  static scripted_reply text(std::string answer, std::optional<token_usage> u = std::nullopt);
  static scripted_reply tools(std::vector<tool_call> calls, std::optional<token_usage> u = std::nullopt);
  static scripted_reply failure(error_info e);
};

class scripted_provider final : public llm_provider {
 public:
  using script_fn = std::function<scripted_reply(const llm_stream&)>;

  // Answers call after call from the list, across all agents; a call past the
  // end fails with a "script_exhausted" error.
  explicit scripted_provider(std::vector<scripted_reply> replies);
  // Answers each call with what `fn` makes of it (fn must be thread-safe).
  explicit scripted_provider(script_fn fn);

  std::string_view name() const override { return "scripted"; }
  std::unique_ptr<llm_call> stream(const llm_stream& request, llm_callbacks callbacks) override;

  std::size_t calls() const { return calls_.load(); }

 private:
  scripted_reply next_reply(const llm_stream& request);
  timer_queue& timers();

  std::mutex mutex_;
  std::vector<scripted_reply> replies_;
  std::size_t next_ = 0;
  script_fn fn_;
  std::atomic<std::size_t> calls_{0};
  std::once_flag timers_started_;
  std::unique_ptr<timer_queue> timers_;
};

// The result a scripted reply stands for, for the call with this id.
llm_result to_llm_result(const std::string& call_id, const scripted_reply& r);

}  // namespace troupe
