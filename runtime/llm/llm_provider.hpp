#pragma once
// The interface every model provider implements: stream one request, report
// deltas as they come, then exactly one final result (a completion or a typed
// error). Providers are asynchronous: stream() returns at once and the
// callbacks run later on the provider's own threads (or, for a provider with
// nothing to wait for, before stream() returns).

#include "directives/llm_stream.hpp"
#include "signals/llm_delta.hpp"
#include "signals/llm_result.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

namespace troupe {

struct llm_callbacks {
  std::function<void(llm_delta)> on_delta;
  std::function<void(llm_result)> on_result;  // called exactly once, unless cancelled
};

// A model call in flight.
class llm_call {
 public:
  virtual ~llm_call() = default;
  // Stops the call. Callbacks may still be running while cancel() is called,
  // but none starts after it returns.
  virtual void cancel() = 0;
};

class llm_provider {
 public:
  virtual ~llm_provider() = default;
  virtual std::string_view name() const = 0;
  // Returns null when the call already finished (its result was delivered).
  virtual std::unique_ptr<llm_call> stream(const llm_stream& request, llm_callbacks callbacks) = 0;
  // Attempts made again after a failure, over the provider's lifetime.
  virtual std::size_t retries() const { return 0; }
};

}  // namespace troupe
