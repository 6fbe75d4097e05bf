#include "runtime/telemetry/telemetry.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace troupe {

namespace {
constexpr std::array<std::string_view, 27> kind_names{
    "request.started", "request.completed", "request.failed",  "request.cancelled", "request.paused",
    "llm.started",     "llm.delta",         "llm.completed",   "llm.error",         "tool.started",
    "tool.completed",  "tool.error",        "tool.timeout",    "tool.retry",        "agent.started",
    "agent.crashed",   "agent.restarted",   "agent.escalated", "context.warning",   "summary.completed",
    "summary.failed",  "callback.failed",   "thread.loaded",   "thread.unloaded",   "actor.restarted",
    "thread.repaired", "approval.decided"};
}

std::string_view to_string(telemetry_kind k) { return kind_names[static_cast<std::size_t>(k)]; }

log_sink::log_sink(bool report_failures) : report_failures_(report_failures) {
  const char* level = std::getenv("TROUPE_LOG");
  debug_ = level && std::strcmp(level, "debug") == 0;
}

bool log_sink::wants(telemetry_kind k) const {
  if (debug_) return k != telemetry_kind::llm_delta;
  return report_failures_ && (k == telemetry_kind::request_failed || k == telemetry_kind::agent_crashed ||
                              k == telemetry_kind::agent_escalated || k == telemetry_kind::callback_failed ||
                              k == telemetry_kind::thread_repaired);
}

void log_sink::emit(const telemetry_event& e) {
  if (!wants(e.kind)) return;
  std::lock_guard lock(mutex_);
  std::fprintf(stderr, "troupe %s agent=%s thread=%s request=%s call=%s tool_call=%s iteration=%d us=%lld %s\n",
               std::string(to_string(e.kind)).c_str(), e.agent_id.c_str(), e.thread_id.c_str(), e.request_id.c_str(),
               e.call_id.c_str(), e.tool_call_id.c_str(), e.iteration, static_cast<long long>(e.duration_us),
               e.detail.c_str());
}

void recording_sink::emit(const telemetry_event& e) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(e);
  }
  emitted_.notify_all();
}

bool recording_sink::wait_for(telemetry_kind k, std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return emitted_.wait_for(lock, timeout, [&] {
    std::size_t seen = 0;
    for (const auto& e : events_) seen += e.kind == k;
    return seen >= n;
  });
}

std::vector<telemetry_event> recording_sink::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::size_t recording_sink::count(telemetry_kind k) const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& e : events_) n += e.kind == k;
  return n;
}

}  // namespace troupe
