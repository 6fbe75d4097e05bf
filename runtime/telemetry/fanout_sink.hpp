#pragma once
// Several sinks as one: each event goes to every sink that wants it, so an
// exporter can run beside the log sink or a program's own sink.

#include "runtime/telemetry/telemetry.hpp"

#include <memory>
#include <vector>

namespace troupe {

class fanout_sink final : public telemetry_sink {
 public:
  explicit fanout_sink(std::vector<std::shared_ptr<telemetry_sink>> sinks);

  bool wants(telemetry_kind k) const override;
  void emit(const telemetry_event& e) override;
  bool records_spans() const override;
  bool records_content() const override;
  void flush(std::chrono::milliseconds deadline) override;

 private:
  std::vector<std::shared_ptr<telemetry_sink>> sinks_;
};

// `base` alone when `extra` is null, else both behind one fan-out sink.
std::shared_ptr<telemetry_sink> combined(std::shared_ptr<telemetry_sink> base, std::shared_ptr<telemetry_sink> extra);

}  // namespace troupe
