#pragma once
// The options `troupe ask` and `troupe chat` share, and what they resolve
// to: a provider, a model name and an agent spec.

#include "actors/runtime.hpp"
#include "strategy/context_policy.hpp"

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
  std::string thread;
  int max_iterations = 10;
  double timeout_seconds = 300;
  int retries = 3;
  bool no_stream = false;
  std::string script;
  std::string context_policy_name;  // short | long | tool | auto; empty: the default policy
  std::optional<std::int64_t> max_input_tokens;
  std::optional<std::size_t> keep_last_turns;
  bool summarize = false;
  std::string store;  // memory: | sqlite:PATH; empty: the command's default
};

// The thread store a --store URI names; `fallback` when it is empty.
std::shared_ptr<thread_store> open_store(const std::string& uri, const std::string& fallback);
// sqlite:$XDG_DATA_HOME/troupe/troupe.db (or ~/.local/share/troupe/troupe.db).
std::string default_store_uri();

// The context policy the options describe, for `model`.
context_policy policy_for(const model_options& o, const std::string& model);

// `conversation`: the options of a single conversation (--thread) too.
void add_model_options(CLI::App& command, model_options& o, bool conversation = true);
// True when the user named a model, a provider or a script.
bool names_a_model(const model_options& o);

// A configuration the user must fix (no API key, an unknown provider or
// tool, an unreadable script): the message says what to do.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct resolved_model {
  std::shared_ptr<llm_provider> provider;
  std::string model;
};

// Throws usage_error.
resolved_model resolve_model(const model_options& o);

// A runtime with the built-in tools registered, and the CLI's agent in it.
// Throws usage_error for a tool that does not exist.
struct cli_session {
  // `default_store`: the URI used when --store is not given.
  cli_session(const model_options& o, const std::string& default_store);
  std::unique_ptr<runtime> rt;
  std::optional<agent> assistant;
  std::string model;
  context_policy policy;
};

}  // namespace troupe::cli
