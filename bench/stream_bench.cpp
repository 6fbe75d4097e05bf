// Parsing a recorded OpenAI stream: SSE framing plus the chunk decoder, fed
// whole and in 1-byte reads, next to a plain scan of the same bytes (the
// memory-bandwidth floor) in the same run.
//
//   build/bench/stream_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include "runtime/llm/wire/detail/openai_format.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

using namespace troupe;

namespace {

constexpr int tokens = 10'000;

// What a server sends for a 10,000-token answer: one chunk per token.
const std::string& recorded_stream() {
  static const std::string s = [] {
    std::string out;
    for (int i = 0; i < tokens; ++i)
      out +=
          "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1763700000,"
          "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word" +
          std::to_string(i % 100) + "\"},\"finish_reason\":null}]}\n\n";
    out += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":10000}}\n\ndata: [DONE]\n\n";
    return out;
  }();
  return s;
}

void decode(benchmark::State& state, std::size_t read_size) {
  const std::string& bytes = recorded_stream();
  std::size_t deltas = 0;
  for (auto _ : state) {
    openai_stream_decoder d("c", [&](llm_delta) { ++deltas; });
    sse_parser p;
    auto on_event = [&](const sse_event& e) { d.on_event(e); };
    for (std::size_t at = 0; at < bytes.size(); at += read_size)
      p.feed(std::string_view(bytes).substr(at, read_size), on_event);
    benchmark::DoNotOptimize(d.finish());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * tokens, benchmark::Counter::kIsRate);
  state.counters["ns/token"] = benchmark::Counter(static_cast<double>(state.iterations()) * tokens,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_openai_stream_whole(benchmark::State& state) { decode(state, recorded_stream().size()); }
void BM_openai_stream_1_byte_reads(benchmark::State& state) { decode(state, 1); }

// Baseline: touching every byte once, counting line ends.
void BM_scan_baseline(benchmark::State& state) {
  const std::string& bytes = recorded_stream();
  for (auto _ : state) benchmark::DoNotOptimize(std::count(bytes.begin(), bytes.end(), '\n'));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}

}  // namespace

BENCHMARK(BM_openai_stream_whole)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_openai_stream_1_byte_reads)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_scan_baseline)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
