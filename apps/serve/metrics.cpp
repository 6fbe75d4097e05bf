#include "apps/serve/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace troupe::serve {

metric_histogram::metric_histogram(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(new std::atomic<std::uint64_t>[bounds.size() + 1]) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end())
    throw std::invalid_argument("histogram bounds must be strictly ascending");
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void metric_histogram::observe(double x) {
  // A bucket counts what is less than or equal to its bound.
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), x) - bounds_.begin();
  counts_[static_cast<std::size_t>(at)].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(x, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

metric_histogram::snapshot metric_histogram::read() const {
  snapshot s;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  // Read apart from the buckets, the count could disagree with +Inf under
  // concurrent updates; the format wants them equal.
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

template <class Metric>
Metric& metric_family<Metric>::with(const std::vector<std::string>& values) {
  if (values.size() != labels_.size())
    throw std::invalid_argument(name_ + ": expected " + std::to_string(labels_.size()) + " label values");
  std::lock_guard lock(mutex_);
  auto it = series_.find(values);
  if (it == series_.end()) {
    std::unique_ptr<Metric> m;
    if constexpr (std::is_same_v<Metric, metric_histogram>)
      m = std::make_unique<Metric>(bounds_);
    else
      m = std::make_unique<Metric>();
    it = series_.emplace(values, std::move(m)).first;
  }
  return *it->second;
}

template <class Metric>
std::vector<std::pair<std::vector<std::string>, const Metric*>> metric_family<Metric>::series() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::vector<std::string>, const Metric*>> out;
  out.reserve(series_.size());
  for (const auto& [values, m] : series_) out.emplace_back(values, m.get());
  return out;
}

template class metric_family<metric_counter>;
template class metric_family<metric_gauge>;
template class metric_family<metric_histogram>;

namespace {

bool valid_name(std::string_view n, bool colon_allowed) {
  if (n.empty()) return false;
  auto first_ok = [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_allowed && c == ':');
  };
  if (!first_ok(n[0])) return false;
  return std::all_of(n.begin() + 1, n.end(), [&](char c) { return first_ok(c) || (c >= '0' && c <= '9'); });
}

void append_number(std::string& out, double x) {
  if (std::isinf(x))
    out += x > 0 ? "+Inf" : "-Inf";
  else if (std::isnan(x))
    out += "NaN";
  else {
    // Plain decimals (0.0005, not 5e-04): the shortest that reads back the same.
    char buf[400];
    const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed);
    out.append(buf, r.ptr);
  }
}

// {a="x",b="y"} with an extra label (le) when given; nothing when empty.
void append_labels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                   std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    out += names[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

template <class Family>
void append_header(std::string& out, const Family& f, std::string_view type) {
  out += "# HELP " + f.name() + ' ' + escape_help(f.help()) + '\n';
  out += "# TYPE " + f.name() + ' ';
  out += type;
  out += '\n';
}

// Counters and gauges: one value per series.
template <class Family>
void append_values(std::string& out, const Family& f, std::string_view type) {
  append_header(out, f, type);
  for (const auto& [values, m] : f.series()) {
    out += f.name();
    append_labels(out, f.labels(), values);
    out += ' ' + std::to_string(m->value()) + '\n';
  }
}

void append_family(std::string& out, const histogram_family& f) {
  append_header(out, f, "histogram");
  for (const auto& [values, m] : f.series()) {
    const metric_histogram::snapshot s = m->read();
    for (std::size_t i = 0; i <= m->bounds().size(); ++i) {
      std::string le;
      append_number(le, i < m->bounds().size() ? m->bounds()[i] : INFINITY);
      out += f.name() + "_bucket";
      append_labels(out, f.labels(), values, "le", le);
      out += ' ' + std::to_string(s.cumulative[i]) + '\n';
    }
    out += f.name() + "_sum";
    append_labels(out, f.labels(), values);
    out += ' ';
    append_number(out, s.sum);
    out += '\n';
    out += f.name() + "_count";
    append_labels(out, f.labels(), values);
    out += ' ' + std::to_string(s.count) + '\n';
  }
}

}  // namespace

namespace {

// Backslashes and newlines always; double quotes inside label values only.
std::string escaped(std::string_view v, bool quotes) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string escape_label_value(std::string_view v) { return escaped(v, true); }
std::string escape_help(std::string_view v) { return escaped(v, false); }

void metrics_registry::claim(const std::string& name, const std::vector<std::string>& labels) {
  if (!valid_name(name, true)) throw std::invalid_argument("not a metric name: \"" + name + "\"");
  for (const std::string& l : labels)
    if (!valid_name(l, false) || l == "le" || l.starts_with("__"))
      throw std::invalid_argument(name + ": not a label name: \"" + l + "\"");
  for (const entry& e : families_) {
    const std::string& taken = e.counters ? e.counters->name() : e.gauges ? e.gauges->name() : e.histograms->name();
    if (taken == name) throw std::invalid_argument("metric registered twice: " + name);
  }
}

counter_family& metrics_registry::counter(std::string name, std::string help, std::vector<std::string> labels) {
  std::lock_guard lock(mutex_);
  claim(name, labels);
  entry e{metric_type::counter, {}, {}, {}};
  e.counters = std::make_unique<counter_family>(std::move(name), std::move(help), std::move(labels));
  return *families_.emplace_back(std::move(e)).counters;
}

gauge_family& metrics_registry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
  std::lock_guard lock(mutex_);
  claim(name, labels);
  entry e{metric_type::gauge, {}, {}, {}};
  e.gauges = std::make_unique<gauge_family>(std::move(name), std::move(help), std::move(labels));
  return *families_.emplace_back(std::move(e)).gauges;
}

histogram_family& metrics_registry::histogram(std::string name, std::string help, std::vector<std::string> labels,
                                              std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  claim(name, labels);
  metric_histogram check(bounds);  // refuses bounds that are not ascending now, not at the first series
  entry e{metric_type::histogram, {}, {}, {}};
  e.histograms =
      std::make_unique<histogram_family>(std::move(name), std::move(help), std::move(labels), std::move(bounds));
  return *families_.emplace_back(std::move(e)).histograms;
}

std::string metrics_registry::exposition() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const entry& e : families_) {
    switch (e.type) {
      case metric_type::counter:
        append_values(out, *e.counters, "counter");
        break;
      case metric_type::gauge:
        append_values(out, *e.gauges, "gauge");
        break;
      case metric_type::histogram:
        append_family(out, *e.histograms);
        break;
    }
  }
  return out;
}

}  // namespace troupe::serve
