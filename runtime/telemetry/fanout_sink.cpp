#include "runtime/telemetry/fanout_sink.hpp"

#include <algorithm>

namespace troupe {

fanout_sink::fanout_sink(std::vector<std::shared_ptr<telemetry_sink>> sinks) : sinks_(std::move(sinks)) {
  std::erase(sinks_, nullptr);
}

bool fanout_sink::wants(telemetry_kind k) const {
  return std::any_of(sinks_.begin(), sinks_.end(), [k](const auto& s) { return s->wants(k); });
}

void fanout_sink::emit(const telemetry_event& e) {
  for (const auto& s : sinks_)
    if (s->wants(e.kind)) s->emit(e);
}

bool fanout_sink::records_spans() const {
  return std::any_of(sinks_.begin(), sinks_.end(), [](const auto& s) { return s->records_spans(); });
}

bool fanout_sink::records_content() const {
  return std::any_of(sinks_.begin(), sinks_.end(), [](const auto& s) { return s->records_content(); });
}

void fanout_sink::flush(std::chrono::milliseconds deadline) {
  // One deadline for all: each sink gets what the ones before it left.
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (const auto& s : sinks_)
    s->flush(std::max(std::chrono::milliseconds(0),
                      std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now())));
}

std::shared_ptr<telemetry_sink> combined(std::shared_ptr<telemetry_sink> base, std::shared_ptr<telemetry_sink> extra) {
  if (!extra) return base;
  if (!base) return extra;
  return std::make_shared<fanout_sink>(std::vector<std::shared_ptr<telemetry_sink>>{std::move(base), std::move(extra)});
}

}  // namespace troupe
