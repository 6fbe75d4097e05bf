#include "apps/serve/serve_metrics.hpp"

namespace troupe::serve {

namespace {

// Seconds, from a millisecond to ten minutes: turns with models and tools.
const std::vector<double> turn_bounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
// From 100 µs: HTTP answers and store commits are mostly fast.
const std::vector<double> fast_bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                      0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};

double seconds_of(std::int64_t us) { return static_cast<double>(us) / 1e6; }

const char* outcome_of(telemetry_kind k) {
  switch (k) {
    case telemetry_kind::request_completed:
    case telemetry_kind::llm_completed:
    case telemetry_kind::tool_completed:
      return "ok";
    case telemetry_kind::request_cancelled:
      return "cancelled";
    case telemetry_kind::request_paused:
      return "paused";
    default:
      return "error";
  }
}

}  // namespace

serve_metrics::serve_metrics()
    : http_requests_(registry_.counter("troupe_http_requests_total", "HTTP requests answered, by route and status.",
                                       {"route", "method", "status"})),
      http_seconds_(registry_.histogram("troupe_http_request_duration_seconds",
                                        "From a request's headers read to its answer's last byte handed to the socket.",
                                        {"route"}, fast_bounds)),
      turns_(registry_.counter("troupe_turns_total", "Turns (requests to an agent) ended, by outcome.",
                               {"agent", "outcome"})),
      turn_seconds_(registry_.histogram("troupe_turn_duration_seconds",
                                        "A turn's time from its start at the agent to its end.", {"agent"},
                                        turn_bounds)),
      turns_running_(registry_.gauge("troupe_turns_running", "Turns an agent is running now.", {"agent"})),
      turns_queued_(registry_.gauge("troupe_turns_queued",
                                    "Turns handed to an agent that wait behind a running turn of their conversation.")),
      model_calls_(
          registry_.counter("troupe_model_calls_total", "Model calls ended, by outcome.", {"agent", "outcome"})),
      model_seconds_(registry_.histogram("troupe_model_call_duration_seconds", "A model call's time, retries included.",
                                         {"agent"}, turn_bounds)),
      tool_calls_(registry_.counter("troupe_tool_calls_total", "Tool calls ended, by tool and outcome.",
                                    {"agent", "tool", "outcome"})),
      tokens_(registry_.counter("troupe_tokens_total", "Tokens the model calls reported, in and out.",
                                {"agent", "direction"})),
      active_streams_(registry_.gauge("troupe_active_streams", "Server-sent event streams open now.")),
      store_commit_seconds_(registry_.histogram("troupe_store_commit_duration_seconds",
                                                "A thread store commit's time, queueing included.", {}, fast_bounds)) {
  // Series without labels exist from the start: a scrape shows them at 0.
  turns_queued_();
  active_streams_();
  store_commit_seconds_();
}

serve_metrics::~serve_metrics() = default;

struct serve_metrics::cluster_families {
  std::function<std::optional<cluster_figures>()> source;
  gauge_family& node;
  gauge_family& shards_held;
  counter_family& handovers;
  counter_family& rounds;
  counter_family& failed_rounds;
  counter_family& asks;
  counter_family& retries;
};

void serve_metrics::follow_cluster(std::function<std::optional<cluster_figures>()> source) {
  cluster_ = std::make_unique<cluster_families>(cluster_families{
      std::move(source), registry_.gauge("troupe_cluster_node", "This node of the cluster (1), by its id.", {"node"}),
      registry_.gauge("troupe_cluster_shards_held", "Shards this node holds now, draining ones included."),
      registry_.counter("troupe_cluster_shard_handovers_total",
                        "Shards this node was granted (acquired), gave up after a drain (drained), or lost "
                        "(taken, run out, or dropped on being declared dead).",
                        {"event"}),
      registry_.counter("troupe_cluster_heartbeat_rounds_total",
                        "Membership rounds run: heartbeat, dead nodes declared, leases renewed, shares taken."),
      registry_.counter("troupe_cluster_heartbeat_failed_rounds_total",
                        "Membership rounds a statement of which failed (the round stopped there)."),
      registry_.counter("troupe_cluster_asks_total",
                        "Asks this node routed: to an agent it holds (local) or to the node that holds it (remote).",
                        {"where"}),
      registry_.counter("troupe_cluster_ask_retries_total",
                        "Asks located again after their agent's node was lost or said it no longer holds it.")});
}

std::string serve_metrics::exposition() const {
  if (cluster_)
    if (const std::optional<cluster_figures> f = cluster_->source()) {
      cluster_->node.with({f->node_id}).set(1);
      cluster_->shards_held().set(static_cast<std::int64_t>(f->shards_held));
      cluster_->handovers.with({"acquired"}).raise_to(f->acquired);
      cluster_->handovers.with({"drained"}).raise_to(f->drained);
      cluster_->handovers.with({"lost"}).raise_to(f->lost);
      cluster_->rounds().raise_to(f->rounds);
      cluster_->failed_rounds().raise_to(f->failed_rounds);
      cluster_->asks.with({"local"}).raise_to(f->local_asks);
      cluster_->asks.with({"remote"}).raise_to(f->remote_asks);
      cluster_->retries().raise_to(f->retries);
    }
  return registry_.exposition();
}

bool serve_metrics::wants(telemetry_kind k) const {
  switch (k) {
    case telemetry_kind::request_started:
    case telemetry_kind::request_completed:
    case telemetry_kind::request_failed:
    case telemetry_kind::request_cancelled:
    case telemetry_kind::request_paused:
    case telemetry_kind::llm_completed:
    case telemetry_kind::llm_error:
    case telemetry_kind::tool_completed:
    case telemetry_kind::tool_error:
      return true;  // a timed-out call ends with a tool_error too
    default:
      return false;
  }
}

void serve_metrics::emit(const telemetry_event& e) {
  switch (e.kind) {
    case telemetry_kind::request_started:
      dequeued(e.request_id);
      turns_running_.with({e.agent_id}).add(1);
      break;
    case telemetry_kind::request_completed:
    case telemetry_kind::request_failed:
    case telemetry_kind::request_cancelled:
    case telemetry_kind::request_paused:
      turns_running_.with({e.agent_id}).add(-1);
      turns_.with({e.agent_id, outcome_of(e.kind)}).add();
      turn_seconds_.with({e.agent_id}).observe(seconds_of(e.duration_us));
      break;
    case telemetry_kind::llm_completed:
    case telemetry_kind::llm_error:
      model_calls_.with({e.agent_id, outcome_of(e.kind)}).add();
      model_seconds_.with({e.agent_id}).observe(seconds_of(e.duration_us));
      if (e.usage) {
        tokens_.with({e.agent_id, "input"})
            .add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, e.usage->input_tokens)));
        tokens_.with({e.agent_id, "output"})
            .add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, e.usage->output_tokens)));
      }
      break;
    case telemetry_kind::tool_completed:
    case telemetry_kind::tool_error:
      // detail is the tool's name on these events.
      tool_calls_.with({e.agent_id, e.detail, outcome_of(e.kind)}).add();
      break;
    default:
      break;
  }
}

void serve_metrics::request_answered(std::string_view route, std::string_view method, int status, double seconds) {
  http_requests_.with({std::string(route), std::string(method), std::to_string(status)}).add();
  http_seconds_.with({std::string(route)}).observe(seconds);
}

void serve_metrics::turn_submitted(const std::string& request_id) {
  std::lock_guard lock(mutex_);
  if (queued_.insert(request_id).second) turns_queued_().add(1);
}

void serve_metrics::dequeued(const std::string& request_id) {
  std::lock_guard lock(mutex_);
  if (queued_.erase(request_id)) turns_queued_().add(-1);
}

void serve_metrics::turn_ended(const std::string& request_id) { dequeued(request_id); }

void serve_metrics::request_finished(const request_record& r) {
  request_answered(r.route, r.method, static_cast<int>(r.status), static_cast<double>(r.duration.count()) / 1e6);
}

}  // namespace troupe::serve
