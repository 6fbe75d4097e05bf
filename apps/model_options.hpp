#pragma once
// The options `troupe ask` and `troupe chat` share, and what they resolve
// to: a provider, a model name and an agent spec.

#include "actors/runtime.hpp"
#include "context/context_choice.hpp"
#include "context/context_policy.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/store/conversation_store.hpp"
#include "runtime/store/open_store.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace troupe::cli {

struct model_options {
  std::string provider;  // openai | anthropic | scripted; empty: from the model's prefix
  std::string model;     // "gpt-4o-mini" or "openai:gpt-4o-mini"
  std::string base_url;
  std::string api_key_env;
  std::string system;
  std::vector<std::string> tools;
  std::vector<std::string> approve;         // chat: tools whose every call waits for the user's y/n/edit
  std::vector<std::string> mcp;             // NAME=COMMAND… or NAME=URL
  std::vector<std::string> mcp_headers;     // SERVER:Header=ENVVAR
  double mcp_timeout_seconds = 60;          // one MCP tool call
  double mcp_startup_timeout_seconds = 30;  // an MCP server's start-up (initialize, tools/list)
  std::string thread;
  int max_iterations = 10;
  double timeout_seconds = 300;
  double lease_ttl_seconds = 60;  // how long another process waits for a thread this one stopped renewing
  int retries = 3;
  bool no_stream = false;
  std::string script;
  context_choice context;  // --context-policy, --max-input-tokens, --keep-last-turns, --summarize, --summarize-to
  std::string store;       // memory: | sqlite:PATH | postgres://…; empty: the command's default
  // A conversation instead of --thread: (user, platform, chat) → its thread.
  std::string user;
  std::string platform = "cli";
  std::string chat_id = "default";
};

// The store a --store URI names (see runtime/store/open_store.hpp);
// `fallback` when it is empty. Throws usage_error with the store's reason.
store_handle store_for(const std::string& uri, const std::string& fallback);

// The context policy the options describe, for `model`.
context_policy policy_for(const model_options& o, const std::string& model);

// `conversation`: the options of a single conversation (--thread) too.
void add_model_options(CLI::App& command, model_options& o, bool conversation = true);
// --store, for the commands that only read and manage stored threads.
void add_store_option(CLI::App& command, std::string& store);
// True when the user named a model, a provider or a script.
bool names_a_model(const model_options& o);

// A configuration the user must fix (no API key, an unknown provider or
// tool, an unreadable script): the message says what to do.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The MCP servers --mcp, --mcp-header and --mcp-timeout describe. Throws usage_error.
std::vector<mcp_server_config> mcp_servers_for(const model_options& o);
// Starts them in `rt` and returns the names of their tools, to enable for
// the agents. A server that cannot be started is a usage_error; a tool one
// lists but troupe cannot offer is left out with a warning on stderr.
std::vector<std::string> add_mcp_servers(runtime& rt, const std::vector<mcp_server_config>& servers);

struct resolved_model {
  std::shared_ptr<llm_provider> provider;
  std::string model;
};

// The replies of a script file (--script): [{"text", "chunks", "tool_calls",
// "error", "usage", "delay_ms"}, …]. Throws usage_error naming the reply.
std::vector<scripted_reply> load_script(const std::string& path);

// Throws usage_error.
resolved_model resolve_model(const model_options& o);

// A runtime with the built-in tools registered, and the CLI's agent in it.
// Throws usage_error for a tool that does not exist.
struct cli_session {
  // `default_store`: the URI used when --store is not given.
  cli_session(const model_options& o, const std::string& default_store);
  store_handle store;
  std::unique_ptr<runtime> rt;
  std::optional<agent> assistant;
  // The thread the questions go to: --thread, the conversation's
  // (--user), or cli:default.
  std::string thread_id;
  std::optional<conversation> conv;
  // Archives the conversation and opens the key's next one (chat's /reset);
  // without a conversation, a fresh thread id.
  void start_over();
  std::string model;
  context_policy policy;
};

}  // namespace troupe::cli
