#include "apps/serve/deployment.hpp"

#include "runtime/llm/scripted_provider.hpp"
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

deployment::deployment(const serve_config& c, deployment_options o) {
  store_ = cli::store_for(c.store, default_store_uri());
  if (o.wrap_threads) store_.threads = o.wrap_threads(store_.threads);
  std::vector<std::pair<agent_config, cli::resolved_model>> resolved;
  for (const agent_config& a : c.agents) {
    cli::resolved_model m = cli::resolve_model(a.model);
    if (auto given = o.providers.find(a.id); given != o.providers.end())
      m.provider = given->second;
    else if (is_scripted(a.model))
      m.provider = cycling_script(a.model.script);
    resolved.emplace_back(a, std::move(m));
  }
  rt_ = std::make_unique<runtime>(
      runtime_options{.provider = resolved.front().second.provider,
                      .store = store_.threads,
                      .telemetry = o.telemetry ? o.telemetry : std::make_shared<log_sink>(false)});
  rt_->tools().add(calculator_tool());
  rt_->tools().add(current_time_tool());
  cli::model_options mcp;
  mcp.mcp = c.mcp;
  mcp.mcp_headers = c.mcp_headers;
  mcp.mcp_timeout_seconds = c.mcp_timeout_seconds;
  (void)cli::add_mcp_servers(*rt_, cli::mcp_servers_for(mcp));
  // Named by the config's field: the runtime would name only the agent.
  for (std::size_t i = 0; i < c.agents.size(); ++i)
    for (std::size_t j = 0; j < c.agents[i].model.tools.size(); ++j)
      if (!rt_->tools().find(c.agents[i].model.tools[j]))
        throw config_error("agents[" + std::to_string(i) + "].tools[" + std::to_string(j) + "]: no tool named \"" +
                           c.agents[i].model.tools[j] + "\"");
  for (auto& [a, m] : resolved) {
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
    try {
      agent handle = rt_->spawn_agent(spec);
      agents_.push_back({a, m.model, a.model.tools, std::move(handle)});
    } catch (const std::invalid_argument& e) {
      throw config_error("agent " + a.id + ": " + e.what());
    }
  }
}

deployment::~deployment() { shutdown(); }

std::shared_ptr<const registered_tool> deployment::tool(std::string_view name) const { return rt_->tools().find(name); }

const deployed_agent* deployment::find(const std::string& id) const {
  for (const auto& a : agents_)
    if (a.config.id == id) return &a;
  return nullptr;
}

bool deployment::agents_up() const {
  if (stopped_) return false;
  for (const auto& a : agents_)
    if (!a.handle.running()) return false;
  return true;
}

void deployment::shutdown() {
  if (stopped_.exchange(true)) return;
  rt_->shutdown();
}

}  // namespace troupe::serve
