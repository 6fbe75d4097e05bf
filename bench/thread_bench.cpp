// The pure core's costs: appending to a thread, taking a snapshot, and one
// ReAct step, each next to a baseline measured in the same run.
//
//   build/bench/thread_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include "strategy/projection.hpp"
#include "strategy/react_machine.hpp"

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <vector>

namespace json = boost::json;
using namespace troupe;

namespace {

// The ids the runtime will use are short random strings; a counter costs the
// same order and keeps the benchmark free of a random source.
class cheap_ids final : public id_source {
 public:
  std::string next(std::string_view) override { return "e" + std::to_string(++n_); }

 private:
  std::uint64_t n_ = 0;
};

entry_draft sample_draft(std::size_t i) {
  return {"message",
          json::object{{"role", i % 2 ? "assistant" : "user"},
                       {"content", "a message of about the length people type " + std::to_string(i)}},
          json::object{{"request_id", "r" + std::to_string(i / 4)}, {"iteration", 1}}};
}

// A conversation of `n` entries: user, tool call, tool result, answer, …
thread conversation(std::size_t n) {
  cheap_ids ids;
  thread t("bench");
  std::vector<entry_draft> drafts;
  drafts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const json::object refs{{"request_id", "r" + std::to_string(i / 4)},
                            {"call_id", "c" + std::to_string(i / 4)},
                            {"tool_call_id", "t" + std::to_string(i / 4)},
                            {"iteration", 1}};
    switch (i % 4) {
      case 0:
        drafts.push_back(
            {"message", {{"role", "user"}, {"content", "what is the weather in city " + std::to_string(i)}}, refs});
        break;
      case 1:
        drafts.push_back({"tool_call", {{"name", "weather"}, {"arguments", {{"city", "c"}}}}, refs});
        break;
      case 2:
        drafts.push_back({"tool_result", {{"name", "weather"}, {"result", {{"temp_c", 12}}}}, refs});
        break;
      default:
        drafts.push_back({"message", {{"role", "assistant"}, {"content", "It is 12 degrees and dry."}}, refs});
        break;
    }
  }
  t.append(std::move(drafts), 1, ids);
  return t;
}

// Appending one entry at a time, as an agent commits. With HoldSnapshot, a
// snapshot is held across every append, as a store or a reader would.
template <bool HoldSnapshot>
void BM_thread_append(benchmark::State& state) {
  cheap_ids ids;
  std::size_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    thread t("bench");
    state.ResumeTiming();
    thread_view held = t.snapshot();
    for (std::size_t k = 0; k < 10'000; ++k) {
      t.append(sample_draft(i++), 1, ids);
      if constexpr (HoldSnapshot) held = t.snapshot();
    }
    benchmark::DoNotOptimize(held.size());
  }
  state.SetItemsProcessed(state.iterations() * 10'000);
}

// Baseline: stamping the same entries into a plain std::vector.
void BM_vector_push_back_baseline(benchmark::State& state) {
  cheap_ids ids;
  std::size_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<entry> v;
    state.ResumeTiming();
    for (std::size_t k = 0; k < 10'000; ++k) {
      entry_draft d = sample_draft(i++);
      v.push_back(entry{ids.next("entry"), v.size(), 1, std::move(d.kind), std::move(d.payload), std::move(d.refs)});
    }
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * 10'000);
}

void BM_thread_snapshot(benchmark::State& state) {
  const thread t = conversation(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    thread_view s = t.snapshot();
    benchmark::DoNotOptimize(s);
  }
}

// Baseline: what a snapshot costs when the history is copied.
void BM_vector_copy_baseline(benchmark::State& state) {
  const thread t = conversation(static_cast<std::size_t>(state.range(0)));
  const std::vector<entry> v(t.entries().begin(), t.entries().end());
  for (auto _ : state) {
    std::vector<entry> copy = v;
    benchmark::DoNotOptimize(copy.data());
  }
}

// One full step: a query on a thread of N entries, up to the llm_stream with
// the projected context (which, until context policies land, is the whole
// thread).
// The step projects the thread through the default context policy (8,000
// tokens, the last 3 turns): its cost should follow the window.
void BM_react_step_query(benchmark::State& state) {
  const thread t = conversation(static_cast<std::size_t>(state.range(0)));
  react_config config;
  config.system_prompt = "You are a weather assistant.";
  config.model = "bench";
  config.tools = make_tool_set({tool_spec{"weather", "Weather by city", {{"type", "object"}}}});
  react_state idle;
  idle.status = react_status::completed;
  const signal q = query{"r-next", "bench", "and tomorrow?", {}};
  cheap_ids ids;
  for (auto _ : state) {
    step_result r = step(config, idle, t, q, 1, ids);
    benchmark::DoNotOptimize(r.directives.data());
  }
  state.counters["entries"] = static_cast<double>(t.size());
}

// A budgeted projection (8k tokens, the default policy but without a turn
// limit) reads only the window: its cost should not grow with the thread.
void BM_project_8k_window(benchmark::State& state) {
  const thread t = conversation(static_cast<std::size_t>(state.range(0)));
  context_policy p;
  p.max_input_tokens = 8000;
  p.reserve_output_tokens = 0;
  p.keep_last_turns = 0;
  const std::vector<entry_draft> pending{{"message", {{"role", "user"}, {"content", "and tomorrow?"}}, {}}};
  std::size_t included = 0;
  for (auto _ : state) {
    projection out = project(t, p, pending, "You are a weather assistant.");
    included = out.meta.entries_included;
    benchmark::DoNotOptimize(out.messages);
  }
  state.counters["entries"] = static_cast<double>(t.size());
  state.counters["in_window"] = static_cast<double>(included);
}

}  // namespace

BENCHMARK(BM_project_8k_window)->Arg(1'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_thread_append<false>)->Name("BM_thread_append")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vector_push_back_baseline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thread_append<true>)->Name("BM_thread_append_with_live_snapshot")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thread_snapshot)->Arg(10)->Arg(1'000)->Arg(100'000);
BENCHMARK(BM_vector_copy_baseline)->Arg(10)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_react_step_query)->Arg(10)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  // glibc serves large blocks with mmap and raises that threshold only after
  // the first such block is freed, so whichever benchmark ran first paid page
  // faults the others did not. Fixed thresholds make the order irrelevant.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
