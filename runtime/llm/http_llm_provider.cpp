#include "runtime/llm/http_llm_provider.hpp"

#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/llm/wire/detail/anthropic_format.hpp"
#include "runtime/llm/wire/detail/openai_format.hpp"

#include <mutex>
#include <random>

namespace troupe {

double retry_jitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

http_provider_options http_options_for(std::string base_url, std::string api_key, const http_settings& settings) {
  http_provider_options h;
  h.format = settings.format;
  h.base_url = std::move(base_url);
  h.api_key = std::move(api_key);
  h.stream = settings.stream;
  h.retry.max_retries = settings.retries;
  h.total_timeout = settings.timeout;
  h.first_byte_timeout = std::min(h.first_byte_timeout, h.total_timeout);
  return h;
}

// Everything about one model call, across its attempts. Guarded by `mutex`:
// the HTTP client's I/O thread, the timer thread and cancel() all touch it.
struct http_llm_provider::call_state {
  std::mutex mutex;
  std::string call_id;
  llm_callbacks callbacks;
  http_request request;
  int attempt = 0;
  std::uint64_t transfer = 0;
  std::uint64_t timer = 0;
  bool cancelled = false;
  bool finished = false;
  bool streamed = false;  // a delta reached the caller: no more retries
  // The attempt in progress:
  int status = 0;
  std::string retry_after;
  std::string error_body;
  sse_parser sse;
  std::unique_ptr<stream_decoder> decoder;
  std::string whole_body;  // when not streaming
};

namespace {

class http_call final : public llm_call {
 public:
  http_call(std::shared_ptr<http_llm_provider::call_state> s, http_client& client, timer_queue& timers,
            std::function<void()> forget = {})
      : state_(std::move(s)), client_(client), timers_(timers), forget_(std::move(forget)) {}
  void cancel() override {
    std::uint64_t transfer, timer;
    {
      std::lock_guard lock(state_->mutex);
      state_->cancelled = true;
      transfer = state_->transfer;
      timer = state_->timer;
    }
    client_.cancel(transfer);  // waits for a callback in progress
    timers_.cancel(timer);
    if (forget_) forget_();
  }

 private:
  std::shared_ptr<http_llm_provider::call_state> state_;
  http_client& client_;
  timer_queue& timers_;
  std::function<void()> forget_;  // drops the call from the provider's live set
};

}  // namespace

http_llm_provider::http_llm_provider(http_provider_options options, std::shared_ptr<http_client> client)
    : options_(std::move(options)), client_(std::move(client)) {}

http_llm_provider::~http_llm_provider() {
  std::unordered_set<std::shared_ptr<call_state>> live;
  {
    std::lock_guard lock(live_mutex_);
    live.swap(live_);
  }
  for (const auto& call : live) http_call(call, *client_, timers_).cancel();
}

std::string_view http_llm_provider::name() const {
  return options_.format == wire_format::openai ? "openai" : "anthropic";
}

std::unique_ptr<llm_call> http_llm_provider::stream(const llm_stream& request, llm_callbacks callbacks) {
  auto call = std::make_shared<call_state>();
  call->call_id = request.call_id;
  call->callbacks = std::move(callbacks);
  http_request& r = call->request;
  std::string base = options_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  r.headers.emplace_back("Content-Type", "application/json");
  if (options_.format == wire_format::openai) {
    r.url = base + "/chat/completions";
    r.body = json_text(openai_request_body(request, options_.stream));
    if (!options_.api_key.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
  } else {
    r.url = base + "/v1/messages";
    r.body = json_text(anthropic_request_body(request, options_.stream));
    if (!options_.api_key.empty()) r.headers.emplace_back("x-api-key", options_.api_key);
    r.headers.emplace_back("anthropic-version", options_.anthropic_version);
  }
  if (options_.stream) r.headers.emplace_back("Accept", "text/event-stream");
  // The call's span, so that a traced model server's spans join the agent's trace.
  if (!request.traceparent.empty()) r.headers.emplace_back("traceparent", request.traceparent);
  r.connect_timeout = options_.connect_timeout;
  r.first_byte_timeout = options_.first_byte_timeout;
  r.idle_timeout = options_.idle_timeout;
  r.total_timeout = options_.total_timeout;
  r.max_response_bytes = options_.max_response_bytes;
  {
    std::lock_guard lock(live_mutex_);
    live_.insert(call);
  }
  attempt(call);
  return std::make_unique<http_call>(call, *client_, timers_, [this, call] {
    std::lock_guard lock(live_mutex_);
    live_.erase(call);
  });
}

void http_llm_provider::attempt(const std::shared_ptr<call_state>& call) {
  std::unique_lock lock(call->mutex);
  if (call->cancelled || call->finished) return;
  ++call->attempt;
  call->status = 0;
  call->retry_after.clear();
  call->error_body.clear();
  call->whole_body.clear();
  call->sse = sse_parser{options_.max_event_bytes};
  // The call owns the decoder that keeps this: a shared_ptr would be a cycle, and the call would never be freed.
  auto on_delta = [call = call.get()](llm_delta d) {
    // Runs inside on_body, which already holds the call's mutex.
    call->streamed = true;
    if (call->callbacks.on_delta) call->callbacks.on_delta(std::move(d));
  };
  if (options_.format == wire_format::openai)
    call->decoder = std::make_unique<openai_stream_decoder>(call->call_id, on_delta);
  else
    call->decoder = std::make_unique<anthropic_stream_decoder>(call->call_id, on_delta);

  http_callbacks cb;
  cb.on_head = [call](const http_response_head& head) {
    std::lock_guard lock(call->mutex);
    call->status = head.status;
    call->retry_after = std::string(head.header("retry-after"));
  };
  cb.on_body = [call, stream = options_.stream](std::string_view bytes) -> std::optional<error_info> {
    std::lock_guard lock(call->mutex);
    if (call->cancelled) return std::nullopt;
    if (call->status != 200) {
      if (call->error_body.size() < 64 * 1024) call->error_body.append(bytes);
    } else if (stream) {
      call->sse.feed(bytes, [&](const sse_event& e) { call->decoder->on_event(e); });
      if (call->sse.overflowed())
        return error_info::of(error_type::response_too_large,
                              "a streamed event exceeded " + std::to_string(call->sse.max_event_bytes()) + " bytes", 1);
    } else {
      call->whole_body.append(bytes);
    }
    return std::nullopt;
  };
  cb.on_done = [this, call](std::optional<error_info> transport_error) {
    finish_attempt(call, std::move(transport_error));
  };
  http_request request = call->request;
  lock.unlock();
  const std::uint64_t id = client_->start(std::move(request), std::move(cb));
  lock.lock();
  call->transfer = id;
}

void http_llm_provider::finish_attempt(const std::shared_ptr<call_state>& call,
                                       std::optional<error_info> transport_error) {
  std::unique_lock lock(call->mutex);
  if (call->cancelled || call->finished) return;
  llm_result result{call->call_id, error_info{}};
  if (transport_error) {
    result.outcome = *transport_error;
  } else if (call->status != 200) {
    result.outcome = classify_http_error(call->status, call->error_body, call->retry_after, wall_clock_ms());
  } else if (options_.stream) {
    result = call->decoder->finish();
  } else {
    result = options_.format == wire_format::openai ? decode_openai_response(call->call_id, call->whole_body)
                                                    : decode_anthropic_response(call->call_id, call->whole_body);
  }

  if (auto* e = std::get_if<error_info>(&result.outcome)) {
    e->attempts = call->attempt;
    if (is_retryable(e->type) && !call->streamed && call->attempt <= options_.retry.max_retries) {
      const auto delay = retry_delay(call->attempt + 1, options_.retry, e->retry_after_seconds, retry_jitter());
      retries_.fetch_add(1, std::memory_order_relaxed);
      // A retry that throws before its transfer starts (out of memory) still ends the call.
      call->timer = timers_.schedule(
          delay, [this, call] { attempt(call); },
          [this, call](const std::string& what) {
            std::unique_lock retry_lock(call->mutex);
            if (call->cancelled || call->finished) return;
            finish(call, retry_lock,
                   llm_result{call->call_id, error_info::of(error_type::callback_failed,
                                                            "the call's retry threw: " + what, call->attempt)});
          });
      return;
    }
  }
  finish(call, lock, std::move(result));
}

void http_llm_provider::finish(const std::shared_ptr<call_state>& call, std::unique_lock<std::mutex>& lock,
                               llm_result result) {
  call->finished = true;
  auto on_result = call->callbacks.on_result;
  lock.unlock();
  {
    std::lock_guard live_lock(live_mutex_);
    live_.erase(call);
  }
  if (on_result) on_result(std::move(result));
}

}  // namespace troupe
