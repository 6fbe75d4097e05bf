#include "runtime/telemetry/otlp_exporter.hpp"

#include "runtime/detail/text.hpp"
#include "runtime/net/http_client.hpp"
#include "runtime/telemetry/detail/genai_spans.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace troupe {

namespace {

using steady = std::chrono::steady_clock;

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// "k1=v1,k2=v2", the W3C Baggage-like list the OTEL_* variables use; an entry
// without "=" or with an empty key is skipped.
std::vector<std::pair<std::string, std::string>> key_values(std::string_view list) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key = percent_decoded(trimmed(item.substr(0, eq)));
    if (key.empty()) continue;
    out.emplace_back(key, percent_decoded(trimmed(item.substr(eq + 1))));
  }
  return out;
}

// `more` replaces entries of `base` with the same key (case-insensitively:
// header names) and adds the others.
void merge(std::vector<std::pair<std::string, std::string>>& base,
           std::vector<std::pair<std::string, std::string>> more) {
  for (auto& [k, v] : more) {
    // Named outside the lambda: clang 14 cannot capture a structured binding.
    const std::string key = ascii_lower(k);
    auto same = std::find_if(base.begin(), base.end(), [&](const auto& kv) { return ascii_lower(kv.first) == key; });
    if (same != base.end())
      same->second = std::move(v);
    else
      base.emplace_back(std::move(k), std::move(v));
  }
}

std::optional<long> positive_number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<otlp_options> otlp_options_from_env(const env_reader& given) {
  const env_reader env = given ? given : [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  auto is = [&](std::string_view name, std::string_view value) {
    auto v = env(name);
    return v && ascii_lower(trimmed(*v)) == value;
  };
  if (is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none")) return std::nullopt;

  otlp_options o;
  if (auto traces = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    o.url = std::string(trimmed(*traces));
  } else if (auto base = env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    o.url = std::string(trimmed(*base));
    if (o.url.empty() || o.url.back() != '/') o.url.push_back('/');
    o.url += "v1/traces";
  }
  if (o.url.empty()) return std::nullopt;

  if (auto h = env("OTEL_EXPORTER_OTLP_HEADERS")) merge(o.headers, key_values(*h));
  if (auto h = env("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) merge(o.headers, key_values(*h));

  std::vector<std::pair<std::string, std::string>> resource;
  if (auto r = env("OTEL_RESOURCE_ATTRIBUTES")) resource = key_values(*r);
  if (auto name = env("OTEL_SERVICE_NAME")) merge(resource, {{"service.name", std::string(trimmed(*name))}});
  if (std::none_of(resource.begin(), resource.end(), [](const auto& kv) { return kv.first == "service.name"; }))
    resource.emplace_back("service.name", "troupe");
  for (auto& [k, v] : resource) o.resource.push_back({std::move(k), std::move(v)});

  auto timeout = positive_number(env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"));
  if (!timeout) timeout = positive_number(env("OTEL_EXPORTER_OTLP_TIMEOUT"));
  if (timeout) o.export_timeout = std::chrono::milliseconds(*timeout);
  if (auto ms = positive_number(env("OTEL_BSP_SCHEDULE_DELAY"))) o.schedule_delay = std::chrono::milliseconds(*ms);
  if (auto n = positive_number(env("OTEL_BSP_MAX_QUEUE_SIZE"))) o.max_queue = static_cast<std::size_t>(*n);
  if (auto n = positive_number(env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"))) o.max_batch = static_cast<std::size_t>(*n);
  o.max_batch = std::min(o.max_batch, o.max_queue);

  // "true" is the variable's first form; the later ones name where content goes.
  o.capture_content = is("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true") ||
                      is("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only") ||
                      is("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_and_event");
  return o;
}

otlp_exporter::otlp_exporter(otlp_options options)
    : options_(std::move(options)),
      client_(std::make_shared<http_client>()),
      queue_(options_.max_queue, options_.max_batch) {
  resource_.attributes = options_.resource;
  resource_.scope_name = "troupe";
  worker_ = std::thread([this] { run(); });
}

struct otlp_exporter::pending_export {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  bool delivered = false;
  int status = 0;
};

otlp_exporter::~otlp_exporter() {
  const auto patience = stuck_ ? steady::duration::zero() : steady::duration(options_.shutdown_timeout);
  stop_by_ = (steady::now() + patience).time_since_epoch().count();
  queue_.close();
  {
    // An export in flight now has a nearer deadline: its wait must see it.
    std::lock_guard lock(pending_mutex_);
    if (pending_) {
      std::lock_guard inner(pending_->mutex);
      pending_->done.notify_all();
    }
  }
  worker_.join();
  abandoned_ += queue_.size();
  // Lost spans are otherwise silent: say so once, for whoever runs the program.
  if (const otlp_stats st = stats(); st.dropped || st.failed || st.abandoned)
    std::fprintf(stderr,
                 "troupe: OTLP exporter to %s lost spans: %llu dropped (queue full), %llu not delivered, %llu still "
                 "queued at exit\n",
                 options_.url.c_str(), static_cast<unsigned long long>(st.dropped),
                 static_cast<unsigned long long>(st.failed), static_cast<unsigned long long>(st.abandoned));
}

steady::time_point otlp_exporter::stop_by() const { return steady::time_point(steady::duration(stop_by_.load())); }

bool otlp_exporter::wants(telemetry_kind k) const { return ends_span(k); }

void otlp_exporter::emit(const telemetry_event& e) {
  if (!ends_span(e.kind) || !e.span.valid()) return;
  queue_.try_push(e);
}

void otlp_exporter::flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(flush_mutex_);
  const std::uint64_t ticket = ++flushes_asked_;
  lock.unlock();
  queue_.wake();
  lock.lock();
  if (!flushed_.wait_for(lock, deadline, [&] { return flushes_done_ >= ticket; })) stuck_ = true;
}

otlp_stats otlp_exporter::stats() const {
  return {exported_.load(), queue_.dropped(), failed_.load(), requests_.load(), abandoned_.load()};
}

void otlp_exporter::run() {
  for (;;) {
    auto batch = queue_.take(options_.max_batch, steady::now() + options_.schedule_delay);
    const bool closing = queue_.closed();
    std::uint64_t asked;
    {
      std::lock_guard lock(flush_mutex_);
      asked = flushes_asked_;
    }
    const bool flushing = closing || asked > flushes_done_;
    const auto give_up = closing ? stop_by() : steady::now() + options_.export_timeout;
    if (!batch.empty()) send(std::move(batch), give_up);
    // A flush, or the end: everything queued goes now, batch after batch.
    while (flushing && queue_.size() > 0 && steady::now() < give_up)
      send(queue_.take(options_.max_batch, steady::now()), give_up);
    if (flushing) {
      {
        std::lock_guard lock(flush_mutex_);
        flushes_done_ = asked;
      }
      flushed_.notify_all();
    }
    if (closing) return;
  }
}

void otlp_exporter::send(std::vector<telemetry_event> events, steady::time_point give_up) {
  std::vector<span> spans;
  spans.reserve(events.size());
  for (const auto& e : events)
    if (auto s = genai_span(e)) spans.push_back(std::move(*s));
  if (spans.empty()) return;

  http_request r;
  r.url = options_.url;
  r.headers = options_.headers;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = otlp_traces_json(resource_, spans);
  const auto budget =
      std::max(std::chrono::milliseconds(1),
               std::min(options_.export_timeout,
                        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - steady::now())));
  r.connect_timeout = r.first_byte_timeout = r.idle_timeout = r.total_timeout = budget;
  r.max_response_bytes = 64 * 1024;

  auto o = std::make_shared<pending_export>();
  http_callbacks cb;
  cb.on_head = [o](const http_response_head& head) {
    std::lock_guard lock(o->mutex);
    o->status = head.status;
  };
  cb.on_body = [](std::string_view) -> std::optional<error_info> { return std::nullopt; };
  cb.on_done = [o](std::optional<error_info> error) {
    {
      std::lock_guard lock(o->mutex);
      o->finished = true;
      o->delivered = !error && o->status >= 200 && o->status < 300;
    }
    o->done.notify_all();
  };
  requests_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(pending_mutex_);
    pending_ = o;
  }
  const std::uint64_t transfer = client_->start(std::move(r), std::move(cb));
  // The transfer's own timeouts end it in time; this wait is a second bound,
  // and the destructor's, which may come while it waits.
  const auto own_limit = steady::now() + budget + std::chrono::milliseconds(100);
  std::unique_lock lock(o->mutex);
  while (!o->finished) {
    const auto limit = std::min(own_limit, stop_by());
    if (steady::now() >= limit) break;
    o->done.wait_until(lock, limit);
  }
  const bool finished = o->finished;
  lock.unlock();
  if (!finished) client_->cancel(transfer);
  {
    std::lock_guard pending_lock(pending_mutex_);
    pending_.reset();
  }
  lock.lock();
  (o->delivered ? exported_ : failed_).fetch_add(spans.size(), std::memory_order_relaxed);
}

}  // namespace troupe
