#pragma once
// What the actors of one runtime share: the world they act on (provider,
// store, tools, workers, telemetry) and where to find each other. Created by
// the runtime facade; every actor holds a shared pointer to it.

#include "actors/detail/actor_pool.hpp"
#include "actors/detail/protocols.hpp"
#include "actors/detail/reserve_growing.hpp"
#include "runtime/store/detail/store_executor.hpp"
#include "runtime/store/thread_store.hpp"
#include "runtime/telemetry/telemetry.hpp"
#include "runtime/tools/detail/worker_pool.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace troupe {

// The running agents by id, pointing at the current incarnation of each (the
// world's agent_directory, by contrast, numbers a simulation's agents).
class live_agents {
 public:
  void put(const std::string& id, agent_actor a, std::chrono::milliseconds deadline) {
    std::lock_guard lock(mutex_);
    agents_[id] = entry{std::move(a), deadline};
  }
  void erase(const std::string& id) {
    std::lock_guard lock(mutex_);
    agents_.erase(id);
  }
  // An agent the supervisor gave up on, and why; asks to it fail with this.
  void mark_failed(const std::string& id, std::string why) {
    std::lock_guard lock(mutex_);
    agents_.erase(id);
    failed_[id] = std::move(why);
  }
  std::optional<std::string> failure(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = failed_.find(id);
    if (it == failed_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<agent_actor> find(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = agents_.find(id);
    if (it == agents_.end()) return std::nullopt;
    return it->second.actor;
  }
  // The agent and its spec's request deadline, for an ask.
  struct entry {
    agent_actor actor;
    std::chrono::milliseconds deadline;
  };
  std::optional<entry> find_entry(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = agents_.find(id);
    if (it == agents_.end()) return std::nullopt;
    return it->second;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    agents_.clear();
  }
  void reserve(std::size_t n) {
    std::lock_guard lock(mutex_);
    reserve_growing(agents_, n);
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return agents_.size();
  }
  std::vector<std::string> ids() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [id, _] : agents_) out.push_back(id);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> agents_;
  std::unordered_map<std::string, std::string> failed_;
};

struct runtime_context {
  std::shared_ptr<llm_provider> provider;
  std::shared_ptr<thread_store> store;
  std::unique_ptr<store_executor> stores;  // the store's loads and commits, off the scheduler
  // Who this runtime is to the store, and how long its leases on threads last.
  std::string owner_id;
  std::chrono::milliseconds lease_ttl{60'000};
  decltype(runtime_options::take_lease) take_lease;  // runtime_options::take_lease
  std::shared_ptr<telemetry_sink> telemetry;
  tool_registry tools;
  std::unique_ptr<worker_pool> workers;
  actor_pool<llm_executor_actor> llm_executors;
  actor_pool<tool_executor_actor> tool_executors;
  live_agents agents;
  int max_restarts = 3;
  std::chrono::milliseconds restart_window{5'000};
  std::optional<std::uint64_t> seed;  // runtime_options::seed
  std::atomic<bool> shutting_down{false};
  // What the sink asked of events, read once: whether requests get span ids
  // and span details, and whether message content goes with them.
  bool record_spans = false;
  bool record_content = false;

  bool wants(telemetry_kind k) const { return telemetry && telemetry->wants(k); }
  // Builds the event only if the sink wants its kind: events copy several
  // strings and most kinds are off in production.
  template <class Build>
  void emit(telemetry_kind k, Build&& build) const {
    if (!wants(k)) return;
    telemetry_event e = build();
    e.kind = k;
    telemetry->emit(e);
  }
};

}  // namespace troupe
