#pragma once
// A small metrics registry and its Prometheus text exposition (format
// 0.0.4): counters, gauges and histograms, each a family of series told
// apart by label values. Updates are lock-free once a series exists; a
// series is found (or made) under its family's lock, so hot paths keep the
// reference they got.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::serve {

class metric_counter {
 public:
  void add(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // For a count kept elsewhere and read at each scrape: the counter goes up
  // to `total`, never down.
  void raise_to(std::uint64_t total) {
    std::uint64_t now = value_.load(std::memory_order_relaxed);
    while (now < total && !value_.compare_exchange_weak(now, total, std::memory_order_relaxed)) {
    }
  }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class metric_gauge {
 public:
  void add(std::int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  void set(std::int64_t n) { value_.store(n, std::memory_order_relaxed); }
  std::int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> value_{0};
};

class metric_histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending; +Inf is implied.
  explicit metric_histogram(const std::vector<double>& bounds);
  void observe(double x);

  struct snapshot {
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    std::uint64_t count = 0;
  };
  snapshot read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative; last: +Inf
  std::atomic<double> sum_{0};
  std::atomic<std::uint64_t> count_{0};
};

enum class metric_type { counter, gauge, histogram };

// One metric name and its series. A series is made the first time its label
// values are asked for and lives as long as the registry.
template <class Metric>
class metric_family {
 public:
  metric_family(std::string name, std::string help, std::vector<std::string> labels, std::vector<double> bounds = {})
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), bounds_(std::move(bounds)) {}

  // Label values in the order of the family's label names.
  Metric& with(const std::vector<std::string>& values);
  Metric& operator()() { return with({}); }

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // Every series, ordered by label values; the references stay valid.
  std::vector<std::pair<std::vector<std::string>, const Metric*>> series() const;

 private:
  std::string name_, help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_;
};

using counter_family = metric_family<metric_counter>;
using gauge_family = metric_family<metric_gauge>;
using histogram_family = metric_family<metric_histogram>;

class metrics_registry {
 public:
  // Names must be valid Prometheus names and unique in the registry
  // (std::invalid_argument otherwise): a clash is a programming error.
  counter_family& counter(std::string name, std::string help, std::vector<std::string> labels = {});
  gauge_family& gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  histogram_family& histogram(std::string name, std::string help, std::vector<std::string> labels,
                              std::vector<double> bounds);

  // Every family in the order it was registered, in the text format.
  std::string exposition() const;

 private:
  void claim(const std::string& name, const std::vector<std::string>& labels);

  struct entry {
    metric_type type;
    std::unique_ptr<counter_family> counters;
    std::unique_ptr<gauge_family> gauges;
    std::unique_ptr<histogram_family> histograms;
  };
  mutable std::mutex mutex_;
  std::vector<entry> families_;
};

// The content type /metrics answers with.
inline constexpr std::string_view exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";

// Label values and HELP text escaped as the format wants (\\, \" in label
// values only, \n).
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);

}  // namespace troupe::serve
