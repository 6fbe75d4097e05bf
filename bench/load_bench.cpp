// A load run of the whole stack against a local model server that answers
// at once: turns per second, and the time troupe itself adds to each turn
// (the turn's time minus its model calls', HTTP included in the latter), with
// 1, 10 and 100 conversations at a time; peak RSS of each run. Each run is a
// process of its own; medians of --repeat runs.
//
//   build/bench/load_bench [--turns 600] [--repeat 3]

#include "apps/simulation.hpp"
#include "bench/bench_support.hpp"
#include "runtime/llm/http_llm_provider.hpp"
#include "support/http_test_server.hpp"

#include <cstdio>

using namespace troupe;
using namespace troupe::testing;
using troupe::bench::flag;
using troupe::bench::in_child;
using troupe::bench::median;

namespace {

const char* instant_answer =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sure.\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";

std::vector<double> load_run(std::size_t conversations, std::size_t total_turns) {
  http_test_server server;
  for (std::size_t i = 0; i < total_turns; ++i) server.respond(scripted_http_response::sse(instant_answer));
  http_provider_options h;
  h.base_url = server.base_url() + "/v1";
  h.retry.max_retries = 0;
  simulation_options o;
  o.agents = conversations;
  o.turns = total_turns / conversations;
  o.concurrency = conversations;
  o.provider = std::make_shared<http_llm_provider>(h, std::make_shared<http_client>());
  o.model = "local";
  simulation_progress progress;
  const simulation_report r = run_simulation(o, progress);
  return {r.turns_per_second,
          r.own_time.p50,
          r.own_time.p99,
          r.turn_latency.p50,
          r.turn_latency.p99,
          static_cast<double>(r.peak_rss_bytes),
          static_cast<double>(r.turns_failed)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t turns = flag(argc, argv, "--turns", 600);
  const std::size_t repeat = flag(argc, argv, "--repeat", 3);
  std::printf("%zu turns per run against a local server that answers at once; medians of %zu runs\n", turns, repeat);
  std::printf("conversations  turns/s   troupe's own time p50 / p99   turn latency p50 / p99   peak RSS\n");
  for (std::size_t c : {std::size_t{1}, std::size_t{10}, std::size_t{100}}) {
    std::vector<std::vector<double>> runs;
    for (std::size_t i = 0; i < repeat; ++i) runs.push_back(in_child([&] { return load_run(c, turns); }));
    auto col = [&](std::size_t k) {
      std::vector<double> v;
      for (const auto& r : runs)
        if (r.size() > k) v.push_back(r[k]);
      return median(v);
    };
    if (col(6) != 0) std::fprintf(stderr, "warning: %g turns failed\n", col(6));
    std::printf("%13zu  %7.0f   %8.3f ms / %8.3f ms       %6.2f ms / %6.2f ms   %5.1f MiB\n", c, col(0), col(1), col(2),
                col(3), col(4), col(5) / (1024 * 1024));
  }
  return 0;
}
