#pragma once
// The troupe subcommands. Each returns the process's exit code: 0 done,
// 1 the request failed, 2 a usage error.

#include "apps/model_options.hpp"
#include "apps/simulation.hpp"

#include <string>

namespace troupe::cli {

int run_ask(const model_options& o, const std::string& question, bool as_json);
int run_chat(const model_options& o);
int run_simulate(simulation_options options, const model_options& model, const std::string& store, bool as_json);

// troupe simulate --scenario FILE
struct scenario_command_options {
  std::string scenario;  // the TOML file
  std::string events;    // the event log (JSONL); empty: none
  std::string report;    // the HTML report; empty: none
  std::string store = "memory:";
  std::optional<std::uint64_t> seed;  // overrides the scenario's
  std::size_t threads = 0;
  bool resume = false;
  bool estimate = false;
  bool json = false;
};
int run_scenario_command(const scenario_command_options& o, const model_options& model);

// troupe threads list|show|fork|delete and troupe conversations
// list|show|trace|archive|delete.
struct store_command_options {
  std::string action;  // the nested command that was given
  std::string store;
  std::string id;
  std::optional<std::uint64_t> at;
  std::string new_id;
  std::string user;
  std::size_t limit = 20;
  std::size_t offset = 0;
  bool json = false;
};
CLI::App* add_threads_command(CLI::App& app, store_command_options& o);
CLI::App* add_conversations_command(CLI::App& app, store_command_options& o);
int run_threads(const store_command_options& o);
int run_conversations(const store_command_options& o);

// troupe cluster status --cluster URI [--json]
struct cluster_command_options {
  std::string cluster;  // the cluster's PostgreSQL database
  bool json = false;
};
CLI::App* add_cluster_command(CLI::App& app, cluster_command_options& o);
int run_cluster(const cluster_command_options& o);

}  // namespace troupe::cli
