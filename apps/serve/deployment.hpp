#pragma once
// The agents a config declares, running: the store, the runtime with the
// built-in and MCP tools, and one agent per [[agents]] entry with its own
// model provider. With [cluster], the runtime is a cluster node's: the
// store is the cluster's database, and each agent runs on the node that
// holds its shard (actors/cluster/cluster_node.hpp).

#include "apps/serve/agent_ref.hpp"
#include "apps/serve/cluster_figures.hpp"
#include "apps/serve/config.hpp"

#include "runtime/store/open_store.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::serve {

struct deployment_options {
  // A provider for an agent id instead of the one its config names (tests
  // use a scripted provider they control).
  std::map<std::string, std::shared_ptr<llm_provider>> providers;
  std::shared_ptr<telemetry_sink> telemetry;  // null: log_sink
  // Wraps the thread store the agents and routes use (the commit timer).
  std::function<std::shared_ptr<thread_store>(std::shared_ptr<thread_store>)> wrap_threads;
};

struct deployed_agent {
  agent_config config;
  std::string model;
  std::vector<std::string> tools;
  agent_ref handle;
};

class deployment {
 public:
  // Throws config_error (or cli::usage_error) for what cannot be started.
  deployment(const serve_config& c, deployment_options o);
  ~deployment();

  const deployed_agent* find(const std::string& id) const;
  const std::vector<deployed_agent>& agents() const { return agents_; }
  // A tool the agents may call (to check a person's edited arguments), or null.
  std::shared_ptr<const registered_tool> tool(std::string_view name) const;
  store_handle& store() { return store_; }
  // Every agent still running (for /readyz); on a cluster node: the node
  // has joined and its last heartbeat round went through.
  bool agents_up() const;
  // On a cluster node: leaves the cluster (its shards drained and handed
  // over) within `timeout`; false if it could not in time. True elsewhere.
  bool leave(std::chrono::milliseconds timeout);
  // Ends every running request with a shutdown error; idempotent.
  void shutdown();
  bool stopped() const { return stopped_; }

  // The cluster node, or null when the deployment is one runtime.
  cluster_node* node() const { return node_.get(); }
  std::optional<cluster_figures> cluster_state() const;

 private:
  runtime& rt() const { return node_ ? node_->local() : *rt_; }

  store_handle store_;
  std::unique_ptr<runtime> rt_;
  std::unique_ptr<cluster_node> node_;
  std::vector<deployed_agent> agents_;
  std::atomic<bool> stopped_{false};
};

}  // namespace troupe::serve
