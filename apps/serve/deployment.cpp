#include "apps/serve/deployment.hpp"

#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "runtime/tools/builtin_tools.hpp"

namespace troupe::serve {

namespace {

// A server outlives any script: its replies are given in a cycle, so an
// offline deployment (the example config) answers every turn.
std::shared_ptr<llm_provider> cycling_script(const std::string& path) {
  auto replies = std::make_shared<const std::vector<scripted_reply>>(cli::load_script(path));
  if (replies->empty()) throw cli::usage_error("the script " + path + " has no replies");
  auto next = std::make_shared<std::atomic<std::size_t>>(0);
  return std::make_shared<scripted_provider>(
      [replies, next](const llm_stream&) { return (*replies)[next->fetch_add(1) % replies->size()]; });
}

bool is_scripted(const cli::model_options& m) {
  return m.provider == "scripted" || m.model.rfind("scripted:", 0) == 0 || (m.provider.empty() && !m.script.empty());
}

}  // namespace

namespace {

agent_spec spec_of(const agent_config& a, const cli::resolved_model& m) {
  agent_spec spec;
  spec.id = a.id;
  spec.model = m.model;
  spec.provider = m.provider;
  spec.system_prompt = a.model.system;
  spec.tools = a.model.tools;
  spec.max_iterations = a.model.max_iterations;
  spec.max_queued_asks = a.max_queued_asks;
  spec.request_deadline = a.request_deadline;
  spec.max_loaded_threads = a.max_loaded_threads;
  spec.thread_idle_timeout = a.thread_idle_timeout;
  spec.context = cli::policy_for(a.model, m.model);
  for (const std::string& t : a.approvals)
    spec.approvals[t] = approval_rule{
        approval_mode::always, {}, "needs a person's approval", a.approval_timeout.count(), verdict::reject};
  return spec;
}

// The built-in and MCP tools, and a check that every tool an agent names exists.
void add_tools(runtime& rt, const serve_config& c) {
  rt.tools().add(calculator_tool());
  rt.tools().add(current_time_tool());
  cli::model_options mcp;
  mcp.mcp = c.mcp;
  mcp.mcp_headers = c.mcp_headers;
  mcp.mcp_timeout_seconds = c.mcp_timeout_seconds;
  (void)cli::add_mcp_servers(rt, cli::mcp_servers_for(mcp));
  // Named by the config's field: the runtime would name only the agent.
  for (std::size_t i = 0; i < c.agents.size(); ++i)
    for (std::size_t j = 0; j < c.agents[i].model.tools.size(); ++j)
      if (!rt.tools().find(c.agents[i].model.tools[j]))
        throw config_error("agents[" + std::to_string(i) + "].tools[" + std::to_string(j) + "]: no tool named \"" +
                           c.agents[i].model.tools[j] + "\"");
}

cluster_node_options node_options_of(const cluster_config& cc) {
  cluster_node_options n;
  n.cluster.conninfo = cc.database;
  n.cluster.node_id = cc.node_id;
  n.cluster.shards = cc.shards;
  n.cluster.heartbeat_interval = cc.heartbeat_interval;
  n.cluster.dead_after = cc.dead_after;
  // A shard's lease outlives a node declared dead by half again, so a live
  // node renews it many times before it could run out.
  n.cluster.shard_lease_ttl = std::max(n.cluster.shard_lease_ttl, cc.dead_after * 3 / 2);
  n.cluster.drain_timeout = cc.drain_timeout;
  n.transport.secret = cc.secret;
  n.transport.listen_host = cc.listen_host;
  n.transport.listen_port = cc.listen_port;
  n.transport.heartbeat_interval = cc.heartbeat_interval;
  if (!cc.tls_certificate.empty()) n.transport.tls = node_tls{cc.tls_certificate, cc.tls_key, cc.tls_ca_file};
  return n;
}

}  // namespace

deployment::deployment(const serve_config& c, deployment_options o) {
  std::vector<agent_spec> specs;
  for (const agent_config& a : c.agents) {
    cli::resolved_model m = cli::resolve_model(a.model);
    if (auto given = o.providers.find(a.id); given != o.providers.end())
      m.provider = given->second;
    else if (is_scripted(a.model))
      m.provider = cycling_script(a.model.script);
    specs.push_back(spec_of(a, m));
  }
  runtime_options ro{.provider = specs.front().provider,
                     .telemetry = o.telemetry ? o.telemetry : std::make_shared<log_sink>(false)};
  if (c.cluster.enabled()) {
    cluster_node_options n = node_options_of(c.cluster);
    n.runtime = std::move(ro);
    n.agents = specs;
    n.prepare = [&c](cluster_node& node) { add_tools(node.local(), c); };
    // The routes use the store the agents commit through (timed alike).
    n.wrap_threads = [this, wrap = o.wrap_threads](std::shared_ptr<thread_store> s) {
      store_.threads = wrap ? wrap(std::move(s)) : std::move(s);
      return store_.threads;
    };
    try {
      node_ = std::make_unique<cluster_node>(std::move(n));
    } catch (const config_error&) {
      throw;
    } catch (const std::exception& e) {
      // The membership's (a database it cannot reach, another shard count),
      // the store's, or the transport's (a TLS file it cannot read, a port it cannot listen on).
      throw config_error("cluster: " + std::string(e.what()));
    }
    store_.conversations = node_->store();
    if (!store_.threads) store_.threads = node_->store();
    for (std::size_t i = 0; i < specs.size(); ++i)
      agents_.push_back({c.agents[i], specs[i].model, c.agents[i].model.tools, agent_ref(node_->agent(specs[i].id))});
    return;
  }
  store_ = cli::store_for(c.store, default_store_uri());
  if (o.wrap_threads) store_.threads = o.wrap_threads(store_.threads);
  ro.store = store_.threads;
  rt_ = std::make_unique<runtime>(std::move(ro));
  add_tools(*rt_, c);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    try {
      agent handle = rt_->spawn_agent(specs[i]);
      agents_.push_back({c.agents[i], specs[i].model, c.agents[i].model.tools, agent_ref(std::move(handle))});
    } catch (const std::invalid_argument& e) {
      throw config_error("agent " + c.agents[i].id + ": " + e.what());
    }
  }
}

deployment::~deployment() { shutdown(); }

std::shared_ptr<const registered_tool> deployment::tool(std::string_view name) const { return rt().tools().find(name); }

const deployed_agent* deployment::find(const std::string& id) const {
  for (const auto& a : agents_)
    if (a.config.id == id) return &a;
  return nullptr;
}

bool deployment::agents_up() const {
  if (stopped_) return false;
  if (node_) {
    // Every agent of the cluster runs somewhere once its shard is taken;
    // this node serves as soon as it takes part in the membership.
    cluster_membership& m = node_->membership();
    return m.rounds() > 0 && !m.last_error();
  }
  for (const auto& a : agents_)
    if (!a.handle.running()) return false;
  return true;
}

bool deployment::leave(std::chrono::milliseconds timeout) { return !node_ || node_->leave(timeout); }

std::optional<cluster_figures> deployment::cluster_state() const {
  if (!node_) return std::nullopt;
  cluster_membership& m = node_->membership();
  const cluster_counters counted = m.counters();
  const cluster_route_counters routed = node_->route_counters();
  return cluster_figures{node_->id(),        m.shards_held().size(), m.rounds(),   counted.failed_rounds,
                         counted.acquired,   counted.released,       counted.lost, routed.local_asks,
                         routed.remote_asks, routed.retries};
}

void deployment::shutdown() {
  if (stopped_.exchange(true)) return;
  // A node that has not left is halted when it closes (in the destructor):
  // the others take its shards after dead_after.
  rt().shutdown();
}

}  // namespace troupe::serve
