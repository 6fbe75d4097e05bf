#include "apps/model_options.hpp"

#include "runtime/random_ids.hpp"
#include "runtime/tools/builtin_tools.hpp"

#include <algorithm>
#include <iostream>

namespace troupe::cli {

void add_model_options(CLI::App& c, model_options& o, bool conversation) {
  c.add_option("--provider", o.provider, "openai, anthropic or scripted (default: from the model's prefix)")
      ->check(CLI::IsMember({"openai", "anthropic", "scripted"}));
  c.add_option("--model", o.model, "Model name, e.g. openai:gpt-4o-mini or anthropic:claude-sonnet-4-5");
  c.add_option("--base-url", o.base_url,
               "API base URL (default: $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL, else the vendor's)");
  c.add_option("--api-key-env", o.api_key_env,
               "Environment variable holding the API key (default: OPENAI_API_KEY or ANTHROPIC_API_KEY)");
  c.add_option("--system", o.system, "System prompt");
  c.add_option("--tool", o.tools, "Enable a built-in tool: calculator, current_time, ask_human (repeatable)");
  c.add_option("--mcp", o.mcp,
               "Tools from an MCP server: NAME=COMMAND ARGS (started over stdio) or NAME=URL (Streamable HTTP); "
               "its tools are NAME__TOOL (repeatable)");
  c.add_option("--mcp-header", o.mcp_headers,
               "An HTTP header for an MCP server, its value from an environment variable: SERVER:Header=ENVVAR "
               "(repeatable)");
  c.add_option("--mcp-timeout", o.mcp_timeout_seconds, "Seconds one MCP tool call may take")
      ->check(CLI::PositiveNumber);
  c.add_option("--mcp-startup-timeout", o.mcp_startup_timeout_seconds,
               "Seconds an MCP server may take to start and list its tools (and each later listing)")
      ->check(CLI::PositiveNumber);
  if (conversation) c.add_option("--thread", o.thread, "Thread id to use");
  c.add_option("--max-iterations", o.max_iterations, "Model calls per question at most")->check(CLI::PositiveNumber);
  c.add_option("--timeout", o.timeout_seconds, "Seconds a question may take")->check(CLI::PositiveNumber);
  c.add_option("--retries", o.retries, "Retries of a failed model call")->check(CLI::Range(0, 20));
  c.add_flag("--no-stream", o.no_stream, "Ask for the whole answer at once instead of streaming");
  c.add_option("--script", o.script, "JSON file of scripted replies (with --provider scripted)");
  c.add_option("--context-policy", o.context.preset,
               "How much of the thread each call sends: short, long, tool or auto (by the model's window)")
      ->check(CLI::IsMember({"short", "long", "tool", "auto"}));
  c.add_option("--max-input-tokens", o.context.max_input_tokens, "Token budget of each call's context")
      ->check(CLI::PositiveNumber);
  c.add_option("--keep-last-turns", o.context.keep_last_turns, "Turns kept in each call's context (0: as many as fit)");
  c.add_flag("--summarize", o.context.summarize,
             "Summarize what falls out of the context window, and send the summary");
  c.add_option("--summarize-to", o.context.summarize_to,
               "With --summarize: the fraction of the window a new summary leaves after it (default 0.5)")
      ->check(CLI::PositiveNumber & CLI::Range(0.0, 1.0));
  if (!conversation) return;
  add_store_option(c, o.store);
  c.add_option("--lease-ttl", o.lease_ttl_seconds,
               "Seconds this process's hold on a thread lasts without a commit; after a crash, another process "
               "takes the thread over once it runs out")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c.add_option("--user", o.user,
               "Continue this user's conversation (with --platform and --chat-id) instead of --thread");
  c.add_option("--platform", o.platform, "The conversation's platform: cli, web_chat, telegram, whatsapp, …")
      ->capture_default_str();
  c.add_option("--chat-id", o.chat_id, "The chat's id on that platform")->capture_default_str();
}

void add_store_option(CLI::App& c, std::string& store) {
  c.add_option("--store", store,
               "Where threads and conversations are kept: memory:, sqlite:PATH or postgres://USER@HOST:PORT/DB "
               "(default: " +
                   default_store_uri() + "; ask without --user: memory:)");
}

context_policy policy_for(const model_options& o, const std::string& model) {
  return resolve_context(o.context, model);
}

bool names_a_model(const model_options& o) {
  return !o.provider.empty() || !o.model.empty() || !o.script.empty() || !o.base_url.empty();
}

std::vector<std::string> add_mcp_servers(runtime& rt, const std::vector<mcp_server_config>& servers) {
  std::vector<std::string> names;
  for (const auto& c : servers) {
    const mcp_server_status status = rt.add_mcp_server(c);
    if (status.error)
      throw usage_error("the MCP server " + c.name + " could not be used: " + status.error->type + ": " +
                        status.error->message);
    for (const auto& e : status.rejected) std::cerr << "troupe: warning: " << e.type << ": " << e.message << "\n";
    names.insert(names.end(), status.tools.begin(), status.tools.end());
  }
  return names;
}

store_handle store_for(const std::string& uri, const std::string& fallback) {
  auto store = open_store(uri, fallback);
  if (!store) throw usage_error(store.error().message);
  return std::move(*store);
}

cli_session::cli_session(const model_options& o, const std::string& default_store) {
  resolved_model m = resolve_model(o);
  model = m.model;
  if (!o.user.empty() && !o.thread.empty()) throw usage_error("give --thread or --user, not both");
  // A conversation outlives the process, so it defaults to the durable store.
  store = store_for(o.store, o.user.empty() ? default_store : default_store_uri());
  thread_id = o.thread.empty() ? "cli:default" : o.thread;
  if (!o.user.empty()) {
    auto c = store.conversations->get_or_create_conversation({o.user, o.platform, o.chat_id});
    if (!c) throw std::runtime_error("cannot open the conversation: " + c.error().type + ": " + c.error().message);
    conv = std::move(*c);
    thread_id = conv->thread_id;
  }
  rt = std::make_unique<runtime>(
      runtime_options{.provider = m.provider,
                      .store = store.threads,
                      .telemetry = std::make_shared<log_sink>(false),
                      .lease_ttl = std::chrono::milliseconds(static_cast<std::int64_t>(o.lease_ttl_seconds * 1000))});
  for (tool& t : builtin_tools()) rt->tools().add(std::move(t));
  rt->tools().add(ask_human_tool());  // a pause that `troupe chat` answers inline
  agent_spec spec;
  spec.id = "cli";
  spec.model = m.model;
  spec.system_prompt = o.system;
  spec.tools = o.tools;
  for (auto& name : add_mcp_servers(*rt, mcp_servers_for(o))) spec.tools.push_back(std::move(name));
  for (const auto& name : o.approve) {
    if (std::find(spec.tools.begin(), spec.tools.end(), name) == spec.tools.end()) spec.tools.push_back(name);
    spec.approvals[name] = approval_rule{approval_mode::always};
  }
  spec.max_iterations = o.max_iterations;
  policy = policy_for(o, m.model);
  spec.context = policy;
  try {
    assistant = rt->spawn_agent(std::move(spec));
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string(e.what()) + " (built-in tools: calculator, current_time, ask_human)");
  }
}

void cli_session::start_over() {
  if (!conv) {
    thread_id = "cli:" + random_ids().next("thread");
    return;
  }
  const conversation_key key{conv->user_id, conv->platform, conv->platform_identifier};
  auto archived = store.conversations->archive_conversation(conv->id);
  auto next = archived ? store.conversations->get_or_create_conversation(key) : stored<conversation>(archived.error());
  if (!next) throw std::runtime_error("cannot start a new conversation: " + next.error().message);
  conv = std::move(*next);
  thread_id = conv->thread_id;
}

}  // namespace troupe::cli
