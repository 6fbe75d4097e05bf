#pragma once
// What `troupe serve` exposes on GET /metrics. Turns, model calls, tool
// calls and tokens come from the runtime's own telemetry (serve_metrics is a
// telemetry sink, put beside the others with fanout_sink); what only the
// server sees — requests by route and status, queued turns, open streams —
// it hears as one of the server's observers; store commits are timed by
// timed_store.

#include "apps/serve/cluster_figures.hpp"
#include "apps/serve/metrics.hpp"
#include "apps/serve/observer.hpp"
#include "runtime/telemetry/telemetry.hpp"

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace troupe::serve {

class serve_metrics final : public telemetry_sink, public serve_observer {
 public:
  serve_metrics();
  ~serve_metrics() override;

  // The telemetry sink: only the events that end something, and starts.
  bool wants(telemetry_kind k) const override;
  void emit(const telemetry_event& e) override;

  // One HTTP request answered; `route` is the route's pattern, not its path
  // (so that ids do not make a series each).
  void request_answered(std::string_view route, std::string_view method, int status, double seconds);

  // A turn handed to an agent under this request id, waiting until the
  // agent starts it (telemetry request_started) or it ends unstarted
  // (turn_ended: refused, cancelled or timed out in the queue).
  void turn_submitted(const std::string& request_id);
  void turn_ended(const std::string& request_id);

  void store_committed(double seconds) { store_commit_seconds_().observe(seconds); }

  // The server's observer.
  void request_finished(const request_record& r) override;
  void turn_started(const turn_started_record& r) override { turn_submitted(r.request_id); }
  void turn_finished(const turn_record& r) override { turn_ended(r.request_id); }
  void stream_opened() override { active_streams_().add(1); }
  void stream_closed() override { active_streams_().add(-1); }

  // On a cluster node: its shards, handovers, heartbeats and routed asks,
  // read from `source` at each scrape. Call before the server starts.
  void follow_cluster(std::function<std::optional<cluster_figures>()> source);

  std::string exposition() const;
  metrics_registry& registry() { return registry_; }

 private:
  void dequeued(const std::string& request_id);

  metrics_registry registry_;
  counter_family& http_requests_;
  histogram_family& http_seconds_;
  counter_family& turns_;
  histogram_family& turn_seconds_;
  gauge_family& turns_running_;
  gauge_family& turns_queued_;
  counter_family& model_calls_;
  histogram_family& model_seconds_;
  counter_family& tool_calls_;
  counter_family& tokens_;
  gauge_family& active_streams_;
  histogram_family& store_commit_seconds_;

  std::mutex mutex_;
  std::unordered_set<std::string> queued_;  // request ids submitted and not yet started

  struct cluster_families;
  std::unique_ptr<cluster_families> cluster_;
};

}  // namespace troupe::serve
