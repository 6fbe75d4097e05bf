#include "actors/simulation.hpp"

#include "runtime/scripted_provider.hpp"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>

namespace troupe {

namespace {

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

}  // namespace

std::size_t current_rss_bytes() { return proc_status_kb("VmRSS") * 1024; }
std::size_t peak_rss_bytes() { return proc_status_kb("VmHWM") * 1024; }

simulation_report run_simulation(const simulation_options& options, simulation_progress& progress,
                                 const std::function<void()>& on_tick) {
  auto model = simulated_model(options.tools_per_turn);
  runtime rt({.provider = model,
              .telemetry = std::make_shared<log_sink>(),
              .scheduler_threads = options.scheduler_threads});
  std::atomic<std::size_t> tool_calls{0};
  tool lookup;
  lookup.spec = {"lookup", "Looks a key up.",
                 boost::json::object{{"type", "object"},
                                     {"properties", {{"key", {{"type", "integer"}}}}},
                                     {"required", boost::json::array{"key"}}}};
  lookup.blocking = false;
  lookup.run = [&tool_calls](const boost::json::object& args, const tool_context&) {
    tool_calls.fetch_add(1, std::memory_order_relaxed);
    return boost::json::value{{"key", args.at("key")}, {"value", "found"}};
  };
  rt.tools().add(std::move(lookup));

  const std::size_t rss_before = current_rss_bytes();
  std::vector<agent> agents;
  agents.reserve(options.agents);
  for (std::size_t i = 0; i < options.agents; ++i)
    agents.push_back(rt.spawn_agent({.id = "sim-" + std::to_string(i), .model = "scripted:sim",
                                     .system_prompt = "You are simulated agent " + std::to_string(i) + ".",
                                     .tools = {"lookup"}}));

  std::mutex m;
  std::condition_variable all_done;
  const std::size_t total = options.agents * options.turns;
  const auto started = std::chrono::steady_clock::now();

  // Each agent's next turn starts when its previous one finishes.
  std::function<void(std::size_t, std::size_t)> ask_turn = [&](std::size_t agent_index, std::size_t turn) {
    ask_options o;
    o.on_reply = [&, agent_index, turn](const reply& r) {
      (r.ok() ? progress.completed : progress.failed).fetch_add(1);
      if (turn + 1 < options.turns) ask_turn(agent_index, turn + 1);
      if (progress.completed + progress.failed == total) {
        std::lock_guard lock(m);
        all_done.notify_all();
      }
    };
    agents[agent_index].ask("Question " + std::to_string(turn + 1) + " for agent " +
                                std::to_string(agent_index),
                            std::move(o));
  };
  if (options.turns > 0)
    for (std::size_t i = 0; i < options.agents; ++i) ask_turn(i, 0);

  {
    std::unique_lock lock(m);
    while (!all_done.wait_for(lock, std::chrono::milliseconds(200),
                              [&] { return progress.completed + progress.failed == total; })) {
      lock.unlock();
      if (on_tick) on_tick();
      lock.lock();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  simulation_report report;
  report.agents = options.agents;
  report.turns_completed = progress.completed;
  report.turns_failed = progress.failed;
  report.seconds = seconds;
  report.turns_per_second = seconds > 0 ? static_cast<double>(report.turns_completed) / seconds : 0;
  report.peak_rss_bytes = peak_rss_bytes();
  const std::size_t rss_after = current_rss_bytes();
  report.rss_bytes_per_agent =
      options.agents && rss_after > rss_before ? (rss_after - rss_before) / options.agents : 0;
  report.llm_calls = model->calls();
  report.tool_calls = tool_calls;
  rt.shutdown();
  return report;
}

}  // namespace troupe
