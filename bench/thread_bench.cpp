// The pure core's costs: appending to a thread, taking a snapshot, and one
// ReAct step, each next to a baseline measured in the same run; and what an
// entry costs in memory and a turn in allocations, counted by a replacement
// operator new (below).
//
//   build/bench/thread_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build/bench/thread_bench --benchmark_filter="entry_memory|one_turn" --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
//   build/bench/thread_bench --benchmark_filter=parse --benchmark_repetitions=10
//   --benchmark_report_aggregates_only=true

#include "context/projection.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "strategy/react_machine.hpp"
#include "strategy/react_thread.hpp"
#include "thread/thread_json.hpp"

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

// Every allocation through operator new is counted, with the bytes the
// allocator really set aside for it (malloc_usable_size, so size classes and
// rounding count, the allocator's own headers do not). The block is the one
// the caller asked for: an earlier version put a 16-byte prefix before it,
// which pushed every power-of-two request (a thread's segments of 4, 8, 16 …
// 256-byte entries) into the next size class and hid what the entries cost.
namespace alloc_count {
std::atomic<std::uint64_t> calls{0};
std::atomic<std::int64_t> live_bytes{0};

void* take(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  calls.fetch_add(1, std::memory_order_relaxed);
  live_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}

void give(void* p) noexcept {
  if (!p) return;
  live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace alloc_count

void* operator new(std::size_t n) { return alloc_count::take(n); }
void* operator new[](std::size_t n) { return alloc_count::take(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return alloc_count::take(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { alloc_count::give(p); }
void operator delete[](void* p) noexcept { alloc_count::give(p); }
void operator delete(void* p, std::size_t) noexcept { alloc_count::give(p); }
void operator delete[](void* p, std::size_t) noexcept { alloc_count::give(p); }

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

// Ids as long as the runtime's random ones ("entry_5f0c2a9e41d7b3c8").
class runtime_like_ids final : public id_source {
 public:
  std::string next(std::string_view kind) override {
    static constexpr char hex[] = "0123456789abcdef";
    std::string id(kind);
    id += '_';
    std::uint64_t v = ++n_ * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 16; ++i, v >>= 4) id.push_back(hex[v & 15]);
    return id;
  }

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
template <bool retry>
void react_step_query(benchmark::State& state) {
  const thread t = conversation(static_cast<std::size_t>(state.range(0)));
  react_config config;
  config.system_prompt = "You are a weather assistant.";
  config.model = "bench";
  config.tools = make_tool_set({tool_spec{"weather", "Weather by city", {{"type", "object"}}}});
  react_state idle;
  idle.status = react_status::completed;
  query asked{"r-next", "bench", "and tomorrow?", {}};
  asked.retry = retry;
  const signal q = asked;
  cheap_ids ids;
  for (auto _ : state) {
    step_result r = step(config, idle, t, q, 1, ids);
    benchmark::DoNotOptimize(r.directives.data());
  }
  state.counters["entries"] = static_cast<double>(t.size());
}

void BM_react_step_query(benchmark::State& state) { react_step_query<false>(state); }

// The same query marked as a retry (ask_options::retry) of a request the
// thread does not hold: the walk over the thread's entries looking for it,
// which an ask that is not a retry never takes.
void BM_react_step_query_retry(benchmark::State& state) { react_step_query<true>(state); }

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

// The agent's side of one turn with one tool call, driven through the
// machine as the runtime drives it: query, a model answer asking for the
// tool, the tool's result, the final answer. Four entries are committed.
struct turn_driver {
  react_config config;
  runtime_like_ids ids;
  std::int64_t now = 1'700'000'000'000;
  std::uint64_t n = 0;

  explicit turn_driver(context_policy context = {}) {
    config.context = std::move(context);
    config.system_prompt = "You are a weather assistant.";
    config.model = "bench";
    config.tools = make_tool_set({tool_spec{"weather", "Weather by city", {{"type", "object"}}}});
  }

  void turn(react_thread& rt) {
    ++n;
    // Request ids as long as the runtime's, whatever the turn's number.
    rt.apply(config, query{ids.next("req"), "", "what is the weather in city " + std::to_string(n), {}}, ++now, ids);
    llm_completion ask;
    ask.tool_calls.push_back(tool_call{ids.next("toolcall"), "weather", json::object{{"city", "c"}}, std::nullopt});
    ask.finish_reason = "tool_calls";
    const std::string tool_call_id = ask.tool_calls[0].id;
    rt.apply(config, llm_result{rt.state().call_id, std::move(ask)}, ++now, ids);
    rt.apply(config,
             tool_result{rt.state().call_id, tool_call_id, "weather", json::value(json::object{{"temp_c", 12}})}, ++now,
             ids);
    llm_completion answer;
    answer.text = "It is 12 degrees and dry.";
    answer.finish_reason = "stop";
    rt.apply(config, llm_result{rt.state().call_id, std::move(answer)}, ++now, ids);
  }
};

// In-memory bytes per entry (the thread's storage and everything its
// entries own, from the counting operator new) next to the entry's JSON
// text, for a thread of N turns made by the machine.
void BM_entry_memory(benchmark::State& state) {
  const auto turns = static_cast<std::size_t>(state.range(0));
  double bytes = 0, json_bytes = 0, entries = 0;
  for (auto _ : state) {
    turn_driver d;
    react_thread rt(thread("bench"));
    for (std::size_t i = 0; i < turns; ++i) d.turn(rt);
    thread t = rt.history();
    json_bytes = 0;
    for (const entry& e : t.entries()) json_bytes += static_cast<double>(boost::json::serialize(to_json(e)).size());
    entries = static_cast<double>(t.size());
    // What dropping the thread gives back, once the machine's state (and the
    // projection it caches) is gone: the entries and their storage.
    rt = react_thread(thread("bench"));
    const std::int64_t with_thread = alloc_count::live_bytes.load();
    { thread gone = std::move(t); }
    bytes = static_cast<double>(with_thread - alloc_count::live_bytes.load());
  }
  state.counters["entries"] = entries;
  state.counters["bytes_per_entry"] = bytes / entries;
  state.counters["json_bytes_per_entry"] = json_bytes / entries;
  state.counters["memory_over_json"] = bytes / json_bytes;
}

// One turn (four steps) on a thread that already holds N turns: time and
// operator-new calls per turn. The thread grows by one turn per iteration.
// With the default policy (the last 3 turns) unless `context` says otherwise.
void one_turn(benchmark::State& state, context_policy context) {
  const auto turns = static_cast<std::size_t>(state.range(0));
  turn_driver d(std::move(context));
  auto fresh = [&] {
    react_thread rt(thread("bench"));
    for (std::size_t i = 0; i < turns; ++i) d.turn(rt);
    return rt;
  };
  react_thread rt = fresh();
  // A short thread is started again whenever it has doubled, so that it
  // stays short; a long one grows by a few percent at most.
  const std::size_t limit = 8 * turns;
  std::uint64_t calls = 0;
  for (auto _ : state) {
    if (rt.history().size() >= limit) {
      state.PauseTiming();
      rt = fresh();
      state.ResumeTiming();
    }
    const std::uint64_t before = alloc_count::calls.load(std::memory_order_relaxed);
    d.turn(rt);
    calls += alloc_count::calls.load(std::memory_order_relaxed) - before;
  }
  state.counters["allocs_per_turn"] = static_cast<double>(calls) / static_cast<double>(state.iterations());
  state.counters["entries"] = static_cast<double>(rt.history().size());
}

void BM_one_turn(benchmark::State& state) { one_turn(state, {}); }

// The same turn with a window of up to 50 turns (long_context): each model
// call's context holds most of a 100-turn thread.
void BM_one_turn_long_context(benchmark::State& state) { one_turn(state, context_policy::long_context()); }

// A turn's four entries as a durable store writes them (payload and refs as
// JSON text, what the SQLite and PostgreSQL stores do at every commit),
// next to the same text with the refs written by building their JSON object
// first, as they were until the refs had a writer of their own.
template <bool refs_via_object>
void entry_text(benchmark::State& state) {
  turn_driver d;
  react_thread rt(thread("bench"));
  d.turn(rt);
  const thread t = rt.history();
  std::size_t bytes = 0;
  for (auto _ : state)
    for (const entry& e : t.entries()) {
      std::string payload = json_text(e.payload);
      std::string refs = refs_via_object ? json_text(e.refs.to_json()) : json_text(e.refs);
      bytes += payload.size() + refs.size();
      benchmark::DoNotOptimize(payload);
      benchmark::DoNotOptimize(refs);
    }
  state.counters["bytes_per_turn"] = static_cast<double>(bytes) / static_cast<double>(state.iterations());
}

void BM_entry_text(benchmark::State& state) { entry_text<false>(state); }
void BM_entry_text_refs_via_json_object_baseline(benchmark::State& state) { entry_text<true>(state); }

// Reading JSON text (what the stores do at every load): parse_json, which
// reads doubles with std::from_chars, next to boost::json::parse, which it
// replaced, on a stored thread of 100 entries and on 1,000 doubles.
template <bool boost_parse>
void parse_text(benchmark::State& state, const std::string& text) {
  for (auto _ : state) {
    boost::system::error_code ec;
    json::value v = boost_parse ? json::parse(text, ec) : parse_json(text, ec);
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

const std::string& thread_text() {
  static const std::string text = json_text(to_json(static_cast<const thread_view&>(conversation(100))));
  return text;
}

const std::string& doubles_text() {
  static const std::string text = [] {
    std::mt19937_64 random(7);
    json::array a;
    for (int i = 0; i < 1'000; ++i) a.emplace_back(std::ldexp(static_cast<double>(random() >> 11), -53) * 1'000);
    return json_text(a);
  }();
  return text;
}

void BM_parse_thread(benchmark::State& state) { parse_text<false>(state, thread_text()); }
void BM_parse_thread_boost_baseline(benchmark::State& state) { parse_text<true>(state, thread_text()); }
void BM_parse_doubles(benchmark::State& state) { parse_text<false>(state, doubles_text()); }
void BM_parse_doubles_boost_baseline(benchmark::State& state) { parse_text<true>(state, doubles_text()); }

}  // namespace

BENCHMARK(BM_parse_thread)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_parse_thread_boost_baseline)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_parse_doubles)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_parse_doubles_boost_baseline)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_entry_text)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_entry_text_refs_via_json_object_baseline)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_entry_memory)->Arg(100)->Arg(100'000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_one_turn)->Arg(100)->Arg(100'000)->Iterations(2'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_one_turn_long_context)->Arg(100)->Iterations(2'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_project_8k_window)->Arg(1'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_thread_append<false>)->Name("BM_thread_append")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vector_push_back_baseline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thread_append<true>)->Name("BM_thread_append_with_live_snapshot")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thread_snapshot)->Arg(10)->Arg(1'000)->Arg(100'000);
BENCHMARK(BM_vector_copy_baseline)->Arg(10)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_react_step_query)->Arg(10)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_react_step_query_retry)->Arg(10)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);

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
