#include "apps/simulation.hpp"

#include "runtime/llm/scripted_provider.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/tools/builtin_tools.hpp"
#include "simulation/percentile.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

namespace troupe {

namespace {

using clk = std::chrono::steady_clock;

std::size_t proc_status_kb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line))
    if (line.rfind(prefix, 0) == 0) return std::stoul(line.substr(prefix.size()));
  return 0;
}

// The scripted model of a simulated turn: K tool calls, then an answer once
// the results are in.
std::shared_ptr<scripted_provider> simulated_model(std::size_t tools_per_turn) {
  return std::make_shared<scripted_provider>([tools_per_turn](const llm_stream& s) {
    if (tools_per_turn == 0 || s.messages.back().role == "tool")
      return scripted_reply::text("Done with turn " + std::to_string(s.iteration) + ".", token_usage{40, 8});
    std::vector<tool_call> calls;
    for (std::size_t i = 0; i < tools_per_turn; ++i)
      calls.push_back(tool_call{"t" + std::to_string(i), "lookup",
                                boost::json::object{{"key", static_cast<std::int64_t>(i)}}, std::nullopt});
    return scripted_reply::tools(std::move(calls), token_usage{30, 12});
  });
}

std::string fill(std::string text, std::size_t agent, std::size_t turn) {
  auto replace = [&](const std::string& key, const std::string& value) {
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  };
  replace("{agent}", std::to_string(agent));
  replace("{turn}", std::to_string(turn));
  return text;
}

// A request id that depends only on the run's seed, the agent and the turn.
std::string seeded_request_id(std::uint64_t seed, std::size_t agent, std::size_t turn) {
  return random_ids(seed + agent * 0x9e3779b97f4a7c15ULL + turn).next("req");
}

latency_summary summarize(std::vector<double> ms) {
  latency_summary s;
  s.samples = ms.size();
  if (ms.empty()) return s;
  s.p50 = percentile(ms, 0.50);
  s.p90 = percentile(ms, 0.90);
  s.p99 = percentile(ms, 0.99);
  s.max = *std::max_element(ms.begin(), ms.end());
  return s;
}

// Sums the time each request spent in model calls, from the runtime's own
// telemetry, so that a turn's time can be split into the model's and troupe's.
// Also counts the tool calls that ended, whatever their tool (a built-in one,
// an MCP server's, re-registered whenever the server lists its tools again).
class model_time_sink final : public telemetry_sink {
 public:
  bool wants(telemetry_kind k) const override {
    return k == telemetry_kind::llm_completed || k == telemetry_kind::llm_error || ends_tool_call(k);
  }
  void emit(const telemetry_event& e) override {
    if (ends_tool_call(e.kind)) {
      tool_calls_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::lock_guard lock(mutex_);
    model_us_[e.request_id] += e.duration_us;
    ++calls_;
  }
  std::size_t tool_calls() const { return tool_calls_.load(std::memory_order_relaxed); }
  std::size_t calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::int64_t take(const std::string& request_id) {
    std::lock_guard lock(mutex_);
    auto it = model_us_.find(request_id);
    if (it == model_us_.end()) return 0;
    const std::int64_t us = it->second;
    model_us_.erase(it);
    return us;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::int64_t> model_us_;
  std::size_t calls_ = 0;
  std::atomic<std::size_t> tool_calls_{0};

  static bool ends_tool_call(telemetry_kind k) {
    return k == telemetry_kind::tool_completed || k == telemetry_kind::tool_error || k == telemetry_kind::tool_timeout;
  }
};

// The turns: which agent runs next, how many are in flight, what came back.
class driver {
 public:
  driver(const simulation_options& o, simulation_progress& progress, std::vector<agent>& agents,
         model_time_sink& model_time, bool streaming)
      : o_(o),
        progress_(progress),
        agents_(agents),
        model_time_(model_time),
        streaming_(streaming),
        next_turn_(agents.size(), 0),
        running_(agents.size()),
        turn_started_(agents.size()) {
    // No turns: nothing to start (a turn started anyway would never count).
    if (o.turns > 0)
      for (std::size_t i = 0; i < agents.size(); ++i) ready_.push_back(i);
    limit_ = o.concurrency ? o.concurrency : agents.size();
    total_ = agents.size() * o.turns;
  }

  void start() { launch(); }

  // Waits until every turn is done, or `stop` is set; calls on_tick now and then.
  void wait(const std::function<void()>& on_tick) {
    std::unique_lock lock(mutex_);
    while (!all_done_.wait_for(lock, std::chrono::milliseconds(200),
                               [&] { return finished_ == total_ || (stopping_ && in_flight_ == 0); })) {
      if (o_.stop && o_.stop->load() && !stopping_) {
        stopping_ = true;
        for (auto& r : running_)
          if (r) r->cancel("the simulation was stopped");
      }
      // A turn past its time limit is cancelled and counted as failed.
      const auto now = clk::now();
      const auto limit = std::chrono::duration<double>(o_.turn_timeout_seconds);
      for (std::size_t a = 0; a < running_.size(); ++a)
        if (running_[a] && now - turn_started_[a] > limit) {
          running_[a]->cancel("the turn took longer than its time limit");
          running_[a].reset();
        }
      lock.unlock();
      if (on_tick) on_tick();
      lock.lock();
    }
  }

  bool stopped() const { return stopping_; }
  std::vector<double> turn_ms, first_token_ms, own_ms;
  std::map<std::string, std::size_t> errors;
  token_usage usage;

 private:
  // Starts turns while there is room. Asks go out with the lock released: a
  // reply may come back at once, on this very thread.
  void launch() {
    for (;;) {
      std::size_t a, turn;
      {
        std::lock_guard lock(mutex_);
        if (stopping_ || in_flight_ >= limit_ || ready_.empty()) return;
        a = ready_.front();
        ready_.pop_front();
        turn = ++next_turn_[a];
        ++in_flight_;
      }
      auto started = std::make_shared<clk::time_point>(clk::now());
      auto first_token = std::make_shared<std::optional<double>>();
      ask_options opts;
      if (streaming_)
        opts.on_event = [started, first_token](const stream_event& e) {
          if (const auto* d = std::get_if<delta_event>(&e); d && !d->text.empty() && !*first_token)
            *first_token = std::chrono::duration<double, std::milli>(clk::now() - *started).count();
        };
      if (o_.seed) opts.request_id = seeded_request_id(*o_.seed, a, turn);
      opts.on_reply = [this, a, started, first_token](const reply& r) { finished(a, r, *started, *first_token); };
      request r = agents_[a].ask(fill(o_.question, a, turn), std::move(opts));
      std::lock_guard lock(mutex_);
      turn_started_[a] = *started;
      if (!r.done()) running_[a] = std::move(r);
    }
  }

  void finished(std::size_t a, const reply& r, clk::time_point started, std::optional<double> first_token) {
    const double ms = std::chrono::duration<double, std::milli>(clk::now() - started).count();
    const double model_ms = static_cast<double>(model_time_.take(r.request_id)) / 1000.0;
    {
      std::lock_guard lock(mutex_);
      record(a, r, ms, model_ms, first_token);
      if (finished_ == total_ || (stopping_ && in_flight_ == 0)) all_done_.notify_all();
    }
    launch();
  }

  void record(std::size_t a, const reply& r, double ms, double model_ms, std::optional<double> first_token) {
    --in_flight_;
    ++finished_;
    turn_ms.push_back(ms);
    own_ms.push_back(std::max(0.0, ms - model_ms));
    if (first_token) first_token_ms.push_back(*first_token);
    usage += r.usage;
    if (r.ok()) {
      progress_.completed.fetch_add(1);
    } else {
      progress_.failed.fetch_add(1);
      ++errors[std::get<error_info>(r.outcome).type];
    }
    running_[a].reset();
    if (next_turn_[a] < o_.turns) ready_.push_back(a);
  }

  const simulation_options& o_;
  simulation_progress& progress_;
  std::vector<agent>& agents_;
  model_time_sink& model_time_;
  const bool streaming_;
  std::mutex mutex_;
  std::condition_variable all_done_;
  std::deque<std::size_t> ready_;       // agents whose next turn may start
  std::vector<std::size_t> next_turn_;  // turns started, per agent
  std::vector<std::optional<request>> running_;
  std::vector<clk::time_point> turn_started_;
  std::size_t limit_ = 0;
  std::size_t in_flight_ = 0;
  std::size_t finished_ = 0;
  std::size_t total_ = 0;
  bool stopping_ = false;
};

}  // namespace

std::size_t current_rss_bytes() { return proc_status_kb("VmRSS") * 1024; }
std::size_t peak_rss_bytes() { return proc_status_kb("VmHWM") * 1024; }

std::optional<heap_usage> current_heap_usage() {
  // Looked up at run time: the library does not choose the allocator (the
  // embedding program does), so it cannot link against jemalloc's API.
  using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  static const auto mallctl = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (!mallctl) return std::nullopt;
  std::uint64_t epoch = 1;  // jemalloc's statistics are a snapshot, refreshed by a new epoch
  std::size_t epoch_size = sizeof epoch;
  if (mallctl("epoch", &epoch, &epoch_size, &epoch, epoch_size) != 0) return std::nullopt;
  heap_usage out;
  for (auto [name, into] : {std::pair{"stats.allocated", &out.allocated}, std::pair{"stats.active", &out.active}}) {
    std::size_t size = sizeof *into;
    if (mallctl(name, into, &size, nullptr, 0) != 0) return std::nullopt;
  }
  return out;
}

simulation_report run_simulation(const simulation_options& options, simulation_progress& progress,
                                 const std::function<void()>& on_tick) {
  const bool scripted = !options.provider;
  std::shared_ptr<scripted_provider> sim_model = scripted ? simulated_model(options.tools_per_turn) : nullptr;
  std::shared_ptr<llm_provider> model = scripted ? sim_model : options.provider;
  auto model_time = std::make_shared<model_time_sink>();
  auto owned_rt = std::make_unique<runtime>(runtime_options{.provider = model,
                                                            .store = options.store,
                                                            .telemetry = model_time,
                                                            .scheduler_threads = options.scheduler_threads,
                                                            .seed = options.seed});
  runtime& rt = *owned_rt;

  std::vector<std::string> tools = options.tools;
  if (scripted) {
    tool lookup;
    lookup.spec = {"lookup", "Looks a key up.",
                   boost::json::object{{"type", "object"},
                                       {"properties", {{"key", {{"type", "integer"}}}}},
                                       {"required", boost::json::array{"key"}}}};
    lookup.blocking = false;
    lookup.run = [](const boost::json::object& args, const tool_context&) {
      return boost::json::value{{"key", args.at("key")}, {"value", "found"}};
    };
    rt.tools().add(std::move(lookup));
    tools = {"lookup"};
  } else {
    for (tool& t : builtin_tools()) rt.tools().add(std::move(t));
    // Added tools (an MCP server's).
    if (options.add_tools)
      for (auto& name : options.add_tools(rt)) tools.push_back(std::move(name));
  }

  const std::size_t rss_before = current_rss_bytes();
  const std::optional<heap_usage> heap_before = current_heap_usage();
  const auto spawn_started = clk::now();
  std::vector<agent> agents;
  agents.reserve(options.agents);
  // In batches, one message to the supervisor each; the progress line moves
  // between them.
  constexpr std::size_t batch = 10'000;
  for (std::size_t first = 0; first < options.agents; first += batch) {
    std::vector<agent_spec> specs;
    specs.reserve(std::min(batch, options.agents - first));
    for (std::size_t i = first; i < options.agents && i < first + batch; ++i) {
      agent_spec& spec = specs.emplace_back();
      spec.id = "sim-" + std::to_string(i);
      spec.model = options.model;
      spec.system_prompt = fill(
          options.system_prompt.empty() && scripted ? "You are simulated agent {agent}." : options.system_prompt, i, 0);
      spec.tools = tools;
      spec.max_iterations = options.max_iterations;
      spec.context = options.context;
    }
    for (agent& a : rt.spawn_agents(std::move(specs))) agents.push_back(std::move(a));
    progress.spawned.store(agents.size(), std::memory_order_relaxed);
    if (on_tick) on_tick();
  }
  const double spawn_seconds = std::chrono::duration<double>(clk::now() - spawn_started).count();

  driver d(options, progress, agents, *model_time, !scripted);
  const std::optional<commit_batching> batching_before = options.store ? options.store->batching() : std::nullopt;
  const std::size_t retries_before = model->retries();
  const auto started = clk::now();
  d.start();
  d.wait(on_tick);
  const double seconds = std::chrono::duration<double>(clk::now() - started).count();

  simulation_report report;
  report.agents = options.agents;
  report.turns_completed = progress.completed;
  report.turns_failed = progress.failed;
  report.stopped = d.stopped();
  report.seconds = seconds;
  report.spawn_seconds = spawn_seconds;
  report.turns_per_second = seconds > 0 ? static_cast<double>(report.turns_completed) / seconds : 0;
  report.peak_rss_bytes = peak_rss_bytes();
  const std::size_t rss_after = current_rss_bytes();
  report.rss_bytes_after = rss_after;
  report.rss_bytes_per_agent = options.agents && rss_after > rss_before ? (rss_after - rss_before) / options.agents : 0;
  if (const std::optional<heap_usage> heap_after = current_heap_usage(); heap_after && heap_before) {
    report.heap_bytes_after = heap_after->allocated;
    report.heap_active_bytes_after = heap_after->active;
    report.heap_bytes_per_agent = options.agents && heap_after->allocated > heap_before->allocated
                                      ? (heap_after->allocated - heap_before->allocated) / options.agents
                                      : 0;
  }
  report.llm_calls = model_time->calls();
  report.tool_calls = model_time->tool_calls();
  report.turn_latency = summarize(d.turn_ms);
  report.first_token = summarize(d.first_token_ms);
  report.own_time = summarize(d.own_ms);
  report.errors_by_type = d.errors;
  report.retries = model->retries() - retries_before;
  report.input_tokens = d.usage.input_tokens;
  report.output_tokens = d.usage.output_tokens;
  report.calls_without_usage = d.usage.calls_without_usage;
  if (batching_before)
    if (const auto after = options.store->batching())
      report.store_batching = commit_batching{after->transactions - batching_before->transactions,
                                              after->commits - batching_before->commits};
  const auto teardown_started = clk::now();
  agents.clear();
  owned_rt.reset();
  report.teardown_seconds = std::chrono::duration<double>(clk::now() - teardown_started).count();
  return report;
}

}  // namespace troupe
