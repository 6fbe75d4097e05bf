#pragma once
// A telemetry sink that sends spans (genai_spans.hpp) to an OpenTelemetry
// collector over OTLP/HTTP in the JSON encoding (POST …/v1/traces).
//
// emit() only copies the event into a bounded queue: it never waits, and
// when the queue is full (a collector that is slow or down) the event is
// dropped and counted. One background thread turns events into spans and
// posts them in batches, when a batch is full or the schedule delay has
// passed. A batch the collector refuses or does not answer in time is
// counted as failed, not retried.

#include "runtime/telemetry/bounded_queue.hpp"
#include "runtime/telemetry/otlp_json.hpp"
#include "runtime/telemetry/telemetry.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace troupe {

class http_client;

struct otlp_options {
  std::string url;  // the traces endpoint itself, e.g. http://127.0.0.1:4318/v1/traces
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<span_attribute> resource;  // service.name and other resource attributes
  std::size_t max_queue = 2048;          // events waiting; beyond, dropped
  std::size_t max_batch = 512;           // spans per request
  std::chrono::milliseconds schedule_delay{1'000};
  std::chrono::milliseconds export_timeout{10'000};
  // What the destructor may spend sending the rest: a program that ends
  // waits this long at most for a collector that does not answer (and not
  // at all when a flush already found it stuck).
  std::chrono::milliseconds shutdown_timeout{1'000};
  bool capture_content = false;  // prompts and answers in spans
};

// The exporter's configuration from the standard variables, or nullopt when
// tracing is off: neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is)
// nor OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/traces") is set, or
// OTEL_SDK_DISABLED is true, or OTEL_TRACES_EXPORTER is "none". Also read:
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS
// ("k=v,k2=v2", values percent-decoded; the traces ones win),
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_TIMEOUT
// and its TRACES variant, OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE,
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, and
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (true, SPAN_ONLY or
// SPAN_AND_EVENT). `env` reads a variable (std::getenv by default).
using env_reader = std::function<std::optional<std::string>(std::string_view)>;
std::optional<otlp_options> otlp_options_from_env(const env_reader& env = {});

struct otlp_stats {
  std::uint64_t exported = 0;   // spans the collector accepted
  std::uint64_t dropped = 0;    // events refused by the full queue
  std::uint64_t failed = 0;     // spans in batches that could not be delivered
  std::uint64_t requests = 0;   // export requests made
  std::uint64_t abandoned = 0;  // events still queued when the exporter had to stop
};

class otlp_exporter final : public telemetry_sink {
 public:
  explicit otlp_exporter(otlp_options options);
  ~otlp_exporter() override;  // sends what is queued, within shutdown_timeout
  otlp_exporter(const otlp_exporter&) = delete;
  otlp_exporter& operator=(const otlp_exporter&) = delete;

  bool wants(telemetry_kind k) const override;
  void emit(const telemetry_event& e) override;
  bool records_spans() const override { return true; }
  bool records_content() const override { return options_.capture_content; }
  // Sends everything queued now; returns once it was sent or `deadline` passed.
  // A flush that runs out of time marks the collector stuck: the destructor
  // then stops at once instead of waiting for it again.
  void flush(std::chrono::milliseconds deadline) override;

  otlp_stats stats() const;
  const otlp_options& options() const { return options_; }

 private:
  void run();
  void send(std::vector<telemetry_event> events, std::chrono::steady_clock::time_point give_up);
  std::chrono::steady_clock::time_point stop_by() const;

  otlp_options options_;
  otlp_resource resource_;
  std::shared_ptr<http_client> client_;
  bounded_queue<telemetry_event> queue_;
  std::atomic<std::uint64_t> exported_{0}, failed_{0}, requests_{0}, abandoned_{0};
  std::atomic<bool> stuck_{false};
  // Flushes asked for and done, so that flush() knows when its events left.
  std::mutex flush_mutex_;
  std::condition_variable flushed_;
  std::uint64_t flushes_asked_ = 0;
  std::uint64_t flushes_done_ = 0;
  // When the destructor wants the worker gone (steady clock, in its own
  // ticks); until then, never. An export in flight is cut short at it.
  std::atomic<std::chrono::steady_clock::rep> stop_by_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};
  // The export in flight, for the destructor to wake.
  struct pending_export;
  std::mutex pending_mutex_;
  std::shared_ptr<pending_export> pending_;
  std::thread worker_;
};

}  // namespace troupe
