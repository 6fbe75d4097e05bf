// How many concurrent model streams one HTTP I/O thread sustains: N calls at
// once against a local server that streams 50 tokens per answer with 20 ms
// between them (one second per answer). Reports completed and failed calls,
// the wall time against the one-second ideal, and the longest gap between
// two deltas of a call (a stalled stream would show here).
//
//   build/bench/concurrent_streams [--streams 1000]

#include "runtime/llm/http_llm_provider.hpp"
#include "support/http_test_server.hpp"

#include <sys/resource.h>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {

struct stream_stats {
  clk::time_point last_delta;
  double max_gap_ms = 0;
  std::size_t deltas = 0;
  bool ok = false;
};

scripted_http_response slow_answer() {
  scripted_http_response r = scripted_http_response::sse("");
  r.chunks.clear();
  for (int i = 0; i < 50; ++i)
    r.chunks.push_back("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t" + std::to_string(i) +
                       "\"}}]}\n\n");
  r.chunks.push_back("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
  r.pause = 20ms;
  return r;
}

void run(std::size_t n) {
  http_test_server server;
  for (std::size_t i = 0; i < n; ++i) server.respond(slow_answer());
  auto client = std::make_shared<http_client>();
  http_provider_options o;
  o.base_url = server.base_url() + "/v1";
  o.retry.max_retries = 0;
  o.first_byte_timeout = 30s;
  o.idle_timeout = 30s;
  http_llm_provider provider(o, client);

  std::mutex m;
  std::condition_variable cv;
  std::vector<stream_stats> stats(n);
  std::size_t finished = 0;
  std::vector<std::unique_ptr<llm_call>> calls;
  const auto start = clk::now();
  for (std::size_t i = 0; i < n; ++i) {
    stats[i].last_delta = clk::now();
    llm_stream req;
    req.call_id = "c" + std::to_string(i);
    req.model = "m";
    req.messages = {llm_message{"user", "go", {}, {}, {}}};
    calls.push_back(provider.stream(
        req, {[&, i](llm_delta) {
                std::lock_guard lock(m);
                const auto now = clk::now();
                if (stats[i].deltas > 0)
                  stats[i].max_gap_ms =
                      std::max(stats[i].max_gap_ms,
                               std::chrono::duration<double, std::milli>(now - stats[i].last_delta).count());
                stats[i].last_delta = now;
                ++stats[i].deltas;
              },
              [&, i](llm_result r) {
                std::lock_guard lock(m);
                stats[i].ok = r.ok() && std::get<llm_completion>(r.outcome).text.size() > 0;
                ++finished;
                cv.notify_all();
              }}));
  }
  {
    std::unique_lock lock(m);
    cv.wait_for(lock, 120s, [&] { return finished == n; });
  }
  const double seconds = std::chrono::duration<double>(clk::now() - start).count();
  std::lock_guard lock(m);
  std::size_t ok = 0, full = 0;
  std::vector<double> gaps;
  for (const auto& s : stats) {
    ok += s.ok;
    full += s.deltas == 50;
    gaps.push_back(s.max_gap_ms);
  }
  std::sort(gaps.begin(), gaps.end());
  std::printf(
      "%5zu streams on one I/O thread: %zu completed, %zu failed, %zu with all 50 deltas; %.2f s (ideal 1.00 s); "
      "longest gap between deltas: median %.0f ms, max %.0f ms (server pause 20 ms)\n",
      n, ok, n - ok, full, seconds, gaps[gaps.size() / 2], gaps.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_streams = 1000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--streams") == 0) max_streams = std::strtoul(argv[i + 1], nullptr, 10);
  // Two descriptors per stream (client and server side).
  rlimit fds{};
  getrlimit(RLIMIT_NOFILE, &fds);
  fds.rlim_cur = fds.rlim_max;
  setrlimit(RLIMIT_NOFILE, &fds);
  for (std::size_t n : {std::size_t{10}, std::size_t{100}, max_streams}) run(n);
  return 0;
}
