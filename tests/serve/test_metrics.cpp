#include "apps/serve/metrics.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "apps/serve/timed_store.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/memory_store.hpp"
#include "support/memory_backed_store.hpp"

#include <catch2/catch.hpp>

#include <mutex>

using namespace troupe;
using namespace troupe::serve;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

}  // namespace

TEST_CASE("the registry writes the Prometheus text format", "[serve][metrics]") {
  metrics_registry r;
  SECTION("a counter: HELP, TYPE, one line per series, ordered by labels") {
    counter_family& c = r.counter("requests_total", "Requests.", {"route", "status"});
    c.with({"/b", "200"}).add(2);
    c.with({"/a", "404"}).add();
    CHECK(r.exposition() ==
          "# HELP requests_total Requests.\n"
          "# TYPE requests_total counter\n"
          "requests_total{route=\"/a\",status=\"404\"} 1\n"
          "requests_total{route=\"/b\",status=\"200\"} 2\n");
  }
  SECTION("a gauge without labels") {
    r.gauge("open", "Open now.")().add(3);
    r.gauge("open2", "Open too.")().set(-1);
    CHECK(r.exposition() ==
          "# HELP open Open now.\n# TYPE open gauge\nopen 3\n"
          "# HELP open2 Open too.\n# TYPE open2 gauge\nopen2 -1\n");
  }
  SECTION("a histogram: cumulative buckets with le, +Inf, sum and count") {
    histogram_family& h = r.histogram("latency_seconds", "Latency.", {"agent"}, {0.1, 1});
    metric_histogram& a = h.with({"a"});
    a.observe(0.05);
    a.observe(0.1);  // on a bound: counted in that bucket
    a.observe(0.5);
    a.observe(7);
    CHECK(r.exposition() ==
          "# HELP latency_seconds Latency.\n"
          "# TYPE latency_seconds histogram\n"
          "latency_seconds_bucket{agent=\"a\",le=\"0.1\"} 2\n"
          "latency_seconds_bucket{agent=\"a\",le=\"1\"} 3\n"
          "latency_seconds_bucket{agent=\"a\",le=\"+Inf\"} 4\n"
          "latency_seconds_sum{agent=\"a\"} 7.65\n"
          "latency_seconds_count{agent=\"a\"} 4\n");
  }
  SECTION("a histogram without labels has only le") {
    r.histogram("h", "H.", {}, {1})().observe(2);
    CHECK(has_line(r.exposition(), "h_bucket{le=\"1\"} 0"));
    CHECK(has_line(r.exposition(), "h_bucket{le=\"+Inf\"} 1"));
    CHECK(has_line(r.exposition(), "h_count 1"));
  }
  SECTION("label values and help text are escaped") {
    r.counter("c_total", "Two\nlines \\ here.", {"v"}).with({"a\"b\\c\nd"}).add();
    const std::string text = r.exposition();
    CHECK(has_line(text, "# HELP c_total Two\\nlines \\\\ here."));
    CHECK(has_line(text, "c_total{v=\"a\\\"b\\\\c\\nd\"} 1"));
  }
  SECTION("the same series is the same metric") {
    counter_family& c = r.counter("x_total", "X.", {"k"});
    c.with({"v"}).add();
    c.with({"v"}).add();
    CHECK(c.with({"v"}).value() == 2);
  }
  SECTION("programming errors are refused") {
    r.counter("dup_total", "D.");
    CHECK_THROWS_AS(r.counter("dup_total", "D."), std::invalid_argument);
    CHECK_THROWS_AS(r.gauge("bad-name", "B."), std::invalid_argument);
    CHECK_THROWS_AS(r.gauge("g", "G.", {"le"}), std::invalid_argument);
    CHECK_THROWS_AS(r.histogram("h2", "H.", {}, {2, 1}), std::invalid_argument);
    CHECK_THROWS_AS(r.counter("n_total", "N.", {"a"}).with({}), std::invalid_argument);
  }
}

TEST_CASE("serve metrics count what the runtime's telemetry reports", "[serve][metrics]") {
  serve_metrics m;
  auto event = [](telemetry_kind k, std::string request_id, std::int64_t us = 0, std::string detail = {}) {
    telemetry_event e{k, "helper", "t1", std::move(request_id), "c1", "", 1, us, std::move(detail)};
    return e;
  };
  SECTION("turns by outcome and their latency") {
    m.emit(event(telemetry_kind::request_started, "r1"));
    m.emit(event(telemetry_kind::request_completed, "r1", 250'000));
    m.emit(event(telemetry_kind::request_started, "r2"));
    m.emit(event(telemetry_kind::request_failed, "r2", 2'000'000));
    m.emit(event(telemetry_kind::request_started, "r3"));
    m.emit(event(telemetry_kind::request_paused, "r3", 5'000'000));
    const std::string text = m.exposition();
    CHECK(has_line(text, "troupe_turns_total{agent=\"helper\",outcome=\"paused\"} 1"));
    CHECK(has_line(text, "troupe_turns_total{agent=\"helper\",outcome=\"ok\"} 1"));
    CHECK(has_line(text, "troupe_turns_total{agent=\"helper\",outcome=\"error\"} 1"));
    CHECK(has_line(text, "troupe_turn_duration_seconds_bucket{agent=\"helper\",le=\"0.25\"} 1"));
    CHECK(has_line(text, "troupe_turn_duration_seconds_sum{agent=\"helper\"} 7.25"));
    CHECK(has_line(text, "troupe_turns_running{agent=\"helper\"} 0"));
  }
  SECTION("model calls, their latency and their tokens") {
    telemetry_event e = event(telemetry_kind::llm_completed, "r1", 100'000);
    e.usage = token_usage{30, 7, 0};
    m.emit(e);
    m.emit(event(telemetry_kind::llm_error, "r1", 5'000));
    const std::string text = m.exposition();
    CHECK(has_line(text, "troupe_model_calls_total{agent=\"helper\",outcome=\"ok\"} 1"));
    CHECK(has_line(text, "troupe_model_calls_total{agent=\"helper\",outcome=\"error\"} 1"));
    CHECK(has_line(text, "troupe_model_call_duration_seconds_count{agent=\"helper\"} 2"));
    CHECK(has_line(text, "troupe_tokens_total{agent=\"helper\",direction=\"input\"} 30"));
    CHECK(has_line(text, "troupe_tokens_total{agent=\"helper\",direction=\"output\"} 7"));
  }
  SECTION("tool calls by tool and outcome") {
    m.emit(event(telemetry_kind::tool_completed, "r1", 0, "calculator"));
    m.emit(event(telemetry_kind::tool_error, "r1", 0, "calculator"));
    CHECK_FALSE(m.wants(telemetry_kind::tool_timeout));  // its tool_error follows
    const std::string text = m.exposition();
    CHECK(has_line(text, "troupe_tool_calls_total{agent=\"helper\",tool=\"calculator\",outcome=\"ok\"} 1"));
    CHECK(has_line(text, "troupe_tool_calls_total{agent=\"helper\",tool=\"calculator\",outcome=\"error\"} 1"));
  }
  SECTION("a queued turn counts until its agent starts it, or until it ends unstarted") {
    m.turn_submitted("r1");
    m.turn_submitted("r2");
    CHECK(has_line(m.exposition(), "troupe_turns_queued 2"));
    m.emit(event(telemetry_kind::request_started, "r1"));
    m.turn_ended("r1");  // already started: counted once
    CHECK(has_line(m.exposition(), "troupe_turns_queued 1"));
    m.turn_ended("r2");
    CHECK(has_line(m.exposition(), "troupe_turns_queued 0"));
  }
  SECTION("HTTP requests by route, method and status; streams; store commits") {
    m.request_answered("/v1/chat/completions", "POST", 200, 0.003);
    m.request_answered("/v1/chat/completions", "POST", 400, 0.0001);
    m.stream_opened();
    m.stream_opened();
    m.stream_closed();
    m.store_committed(0.0004);
    const std::string text = m.exposition();
    CHECK(
        has_line(text, "troupe_http_requests_total{route=\"/v1/chat/completions\",method=\"POST\",status=\"200\"} 1"));
    CHECK(
        has_line(text, "troupe_http_requests_total{route=\"/v1/chat/completions\",method=\"POST\",status=\"400\"} 1"));
    CHECK(has_line(text, "troupe_http_request_duration_seconds_count{route=\"/v1/chat/completions\"} 2"));
    CHECK(has_line(text, "troupe_active_streams 1"));
    CHECK(has_line(text, "troupe_store_commit_duration_seconds_bucket{le=\"0.0005\"} 1"));
  }
  SECTION("a fresh server shows its unlabelled series at zero") {
    const std::string text = m.exposition();
    CHECK(has_line(text, "troupe_active_streams 0"));
    CHECK(has_line(text, "troupe_turns_queued 0"));
    CHECK(has_line(text, "troupe_store_commit_duration_seconds_count 0"));
    CHECK(has_line(text, "# TYPE troupe_turn_duration_seconds histogram"));
  }
}

TEST_CASE("a timed store times every commit and passes everything on", "[serve][metrics]") {
  auto inner = std::make_shared<memory_store>();
  std::vector<double> commits;
  std::mutex mutex;
  timed_store store(inner, [&](double s) {
    std::lock_guard lock(mutex);
    commits.push_back(s);
  });
  random_ids ids(7);
  thread t("t1", 0);
  t.append(entry_draft{"message", {{"role", "user"}, {"content", "hi"}}, {}}, 0, ids);
  SECTION("a blocking commit") {
    REQUIRE(store.append(t, 0).has_value());
    CHECK(commits.size() == 1);
    CHECK(commits[0] >= 0);
    CHECK(inner->load("t1")->size() == 1);
  }
  SECTION("a queued commit is timed when its outcome comes") {
    std::optional<stored<std::uint64_t>> outcome;
    store.append_queued(t, 0, nullptr, [&](stored<std::uint64_t> r) { outcome = r; });
    REQUIRE(outcome);
    CHECK(outcome->has_value());
    CHECK(commits.size() == 1);
  }
  SECTION("a refused commit is timed too, and refused") {
    REQUIRE(store.append(t, 0).has_value());
    CHECK_FALSE(store.append(t, 0).has_value());  // a stale writer
    CHECK(commits.size() == 2);
  }
  SECTION("reads, removal and the commit path are the wrapped store's") {
    REQUIRE(store.append(t, 0).has_value());
    CHECK(store.path() == inner->path());
    CHECK(store.list() == std::vector<std::string>{"t1"});
    CHECK(store.remove("t1"));
    CHECK_FALSE(inner->load("t1").has_value());
    CHECK(commits.size() == 1);
  }
}

namespace {

// A store that queues its lease takes and releases (as SQLite's and
// PostgreSQL's do), and counts those that reach it that way.
class queueing_leases final : public testing::memory_backed_store {
 public:
  bool queues_lease_takes() const override { return true; }
  void acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override {
    ++queued_takes;
    done(inner.acquire_lease(thread_id, owner, now_ms, ttl));
  }
  void release_lease_queued(const std::string& thread_id, const thread_lease& held,
                            std::function<void()> done) override {
    ++queued_releases;
    inner.release_lease(thread_id, held);
    done();
  }
  int queued_takes = 0;
  int queued_releases = 0;
};

}  // namespace

TEST_CASE("a timed store lets lease takes and releases queue as the wrapped store's do", "[serve][metrics]") {
  auto inner = std::make_shared<queueing_leases>();
  timed_store store(inner, [](double) {});
  CHECK(store.queues_lease_takes());
  std::optional<stored<thread_lease>> taken;
  store.acquire_lease_queued("t1", "A", 1'000, std::chrono::seconds(5), [&](stored<thread_lease> r) { taken = r; });
  REQUIRE(taken);
  REQUIRE(taken->has_value());
  CHECK((*taken)->owner == "A");
  CHECK(inner->queued_takes == 1);
  bool given_up = false;
  store.release_lease_queued("t1", **taken, [&] { given_up = true; });
  CHECK(given_up);
  CHECK(inner->queued_releases == 1);
}
