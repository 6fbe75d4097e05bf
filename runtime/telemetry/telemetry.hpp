#pragma once
// What the runtime reports about its work. Every event carries the
// correlation ids it has; a sink decides what to do with them. Sinks are
// called from many threads at once and must be thread-safe.

#include "runtime/telemetry/trace_context.hpp"
#include "signals/token_usage.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

enum class telemetry_kind {
  request_started,
  request_completed,
  request_failed,
  request_cancelled,
  request_paused,  // ended awaiting_input: the request waits for a person, it did not fail
  llm_started,
  llm_delta,
  llm_completed,
  llm_error,
  tool_started,
  tool_completed,
  tool_error,
  tool_timeout,
  tool_retry,
  agent_started,
  agent_crashed,
  agent_restarted,
  agent_escalated,
  context_warning,
  summary_completed,
  summary_failed,
  callback_failed,  // an embedder's on_event / on_reply threw
  thread_loaded,
  thread_unloaded,   // an agent's thread table: loads and evictions
  actor_restarted,   // an executor or broker replaced in its pool slot
  thread_repaired,   // a store read a thread with bytes that are not UTF-8, mended (once per thread)
  approval_decided,  // a tool call that waited for a person got its decision: the wait ends (approval_waits.hpp)
};

std::string_view to_string(telemetry_kind k);

struct telemetry_event {
  telemetry_kind kind;
  std::string agent_id;
  std::string thread_id;
  std::string request_id;
  std::string call_id;
  std::string tool_call_id;
  int iteration = 0;
  std::int64_t duration_us = 0;  // for *_completed, *_error, *_timeout
  std::string detail;            // tool name, error type and message, …

  // What a trace needs, on the events that end a span (a request, a model
  // call, a tool call: genai_spans.hpp), filled only for sinks that record
  // spans: the default log sink pays nothing for them.
  span_context span{};               // the span this event ends
  std::uint64_t parent_span_id = 0;  // 0: a root span
  std::int64_t end_unix_ns = 0;      // the span's end; it began duration_us before
  std::string error_type{};          // a failure's type alone (detail also has its message)
  // Model calls:
  std::string model{};
  std::string provider{};
  // On llm_completed always, for metrics; elsewhere with spans. A request's
  // counts calls whose tokens are not known (calls_without_usage, failed
  // calls included): its spans then report no token counts at all.
  std::optional<token_usage> usage{};
  std::string finish_reason{};
  std::string response_id{};         // as the provider named its response
  std::string response_model{};      // the model that answered, as the provider named it
  std::int64_t first_chunk_us = -1;  // from the call's start to its first delta; -1: none came
  // Message content, only for sinks that ask for it (it may be private), as
  // JSON text in the shape of the GenAI conventions' gen_ai.*.messages.
  std::string input_messages{};
  std::string output_messages{};
  // approval_decided: the decision's verdict, who decided ("expiry" when
  // the deadline did) and whether it was the rule's default at its deadline.
  std::string verdict{};
  std::string decided_by{};
  bool expired = false;
};

class telemetry_sink {
 public:
  virtual ~telemetry_sink() = default;
  // Lets emitters skip building events nobody wants (deltas are frequent).
  virtual bool wants(telemetry_kind) const { return true; }
  virtual void emit(const telemetry_event& e) = 0;
  // Whether events should carry the span fields above (random ids, a clock
  // read, a few copies per request), and message content too.
  virtual bool records_spans() const { return false; }
  virtual bool records_content() const { return false; }
  // Delivers what the sink still holds, taking at most `deadline`; called
  // when the runtime shuts down.
  virtual void flush(std::chrono::milliseconds /*deadline*/) {}
};

// Writes one line per event to stderr when TROUPE_LOG=debug; otherwise only
// failures, escalations and crashes — or nothing, for programs that report
// failures themselves (report_failures = false).
class log_sink final : public telemetry_sink {
 public:
  explicit log_sink(bool report_failures = true);
  bool wants(telemetry_kind k) const override;
  void emit(const telemetry_event& e) override;

 private:
  bool debug_;
  bool report_failures_;
  std::mutex mutex_;
};

// Keeps every event, for tests; they can wait for an event to have happened
// instead of sleeping.
class recording_sink final : public telemetry_sink {
 public:
  void emit(const telemetry_event& e) override;
  std::vector<telemetry_event> events() const;
  std::size_t count(telemetry_kind k) const;
  // True once at least `n` events of kind `k` were emitted; false on timeout.
  bool wait_for(telemetry_kind k, std::size_t n, std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable emitted_;
  std::vector<telemetry_event> events_;
};

}  // namespace troupe
