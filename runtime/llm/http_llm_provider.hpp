#pragma once
// A model provider over HTTP: the OpenAI chat-completions format (OpenAI,
// llama.cpp server, vLLM, Ollama, OpenRouter, …) or Anthropic's Messages.
//
// Failed attempts are typed from the status and the body; rate_limited,
// overloaded, server and network errors are retried with backoff
// and jitter, honouring Retry-After, as long as nothing was streamed to the
// caller yet (a retry must never repeat text). The error that ends a call
// says how many attempts were made. The API key goes into the request's
// header only: it never appears in an error, a log or a result.

#include "runtime/llm/llm_errors.hpp"
#include "runtime/llm/llm_provider.hpp"
#include "runtime/llm/wire/sse_parser.hpp"
#include "runtime/net/http_client.hpp"
#include "runtime/net/timer_queue.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

namespace troupe {

enum class wire_format { openai, anthropic };

struct http_provider_options {
  wire_format format = wire_format::openai;
  std::string base_url;  // e.g. https://api.openai.com/v1, https://api.anthropic.com
  std::string api_key;   // may be empty for local servers
  bool stream = true;
  llm_retry_policy retry;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds first_byte_timeout{60'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds total_timeout{600'000};
  // Caps on what a server may send, beyond which the call fails with
  // response_too_large (never retried: the server would send it again). A
  // streamed event, with the line being read:
  std::size_t max_event_bytes = default_max_event_bytes;
  // A whole response body, streamed or not (the streamed text is kept too):
  std::size_t max_response_bytes = 32 * 1024 * 1024;
  std::string anthropic_version = "2023-06-01";
};

// How calls to a server are made, as the command line sets them.
struct http_settings {
  wire_format format = wire_format::openai;
  bool stream = true;
  int retries = 3;  // beyond the first attempt
  // The whole call; the wait for the first byte is bounded by it too.
  std::chrono::milliseconds timeout{300'000};
};

// The options for the server at `base_url` (`api_key` may be empty).
http_provider_options http_options_for(std::string base_url, std::string api_key, const http_settings& settings);

// A uniform draw in [0, 1) from this thread's own source: the jitter of
// retry_delay.
double retry_jitter();

class http_llm_provider final : public llm_provider {
 public:
  // `client` may be shared by several providers: one I/O thread for all.
  http_llm_provider(http_provider_options options, std::shared_ptr<http_client> client);
  ~http_llm_provider() override;

  std::string_view name() const override;
  std::unique_ptr<llm_call> stream(const llm_stream& request, llm_callbacks callbacks) override;
  std::size_t retries() const override { return retries_.load(std::memory_order_relaxed); }

  struct call_state;

 private:
  void attempt(const std::shared_ptr<call_state>& call);
  void finish_attempt(const std::shared_ptr<call_state>& call, std::optional<error_info> transport_error);
  // Ends the call with its result; `lock` holds the call's mutex and is released before on_result runs.
  void finish(const std::shared_ptr<call_state>& call, std::unique_lock<std::mutex>& lock, llm_result result);

  http_provider_options options_;
  std::shared_ptr<http_client> client_;
  timer_queue timers_;
  std::atomic<std::size_t> retries_{0};
  // Calls not finished yet: cancelled when the provider goes, so that no
  // callback reaches a destroyed provider.
  std::mutex live_mutex_;
  std::unordered_set<std::shared_ptr<call_state>> live_;
};

}  // namespace troupe
