// The troupe command:
//   troupe ask [options] QUESTION      one question, the answer streamed (or --json)
//   troupe chat [options]              a conversation; scriptable through stdin
//   troupe simulate --agents N --turns M [model options] [--concurrency C] [--seed N] [--json]
//   troupe simulate --scenario FILE [--events FILE] [--store URI] [--resume] [--seed N] [--json]
//   troupe threads list|show ID|fork ID --at SEQ|delete ID [--store URI] [--json]
//   troupe conversations list --user U|show ID|trace ID|archive ID|delete ID [--store URI] [--json]
//   troupe serve --config FILE [--listen HOST:PORT]   the agents behind an HTTP API
//   troupe cluster status --cluster URI [--json]       a cluster's nodes and shards

#include "apps/commands.hpp"
#include "apps/serve/serve_command.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  using namespace troupe::cli;
  CLI::App app{"troupe: many LLM agents as actors, running at once, safely and fast."};
  app.require_subcommand(1);

  model_options ask_opts;
  std::string question;
  bool ask_json = false;
  CLI::App* ask = app.add_subcommand("ask", "Ask one question; the answer streams to stdout.");
  add_model_options(*ask, ask_opts);
  ask->add_flag("--json", ask_json, "Print one JSON object at the end instead of streaming");
  ask->add_option("question", question, "The question")->required();

  model_options chat_opts;
  CLI::App* chat = app.add_subcommand("chat",
                                      "A conversation: each answer streams, then its time and tokens. Reads questions "
                                      "from stdin when it is not a terminal.");
  add_model_options(*chat, chat_opts);
  chat->add_option("--approve", chat_opts.approve,
                   "A tool whose calls wait for your y/n/edit before they run (repeatable; enables the tool)");

  troupe::simulation_options sim;
  model_options sim_model;
  bool sim_json = false;
  CLI::App* simulate = app.add_subcommand(
      "simulate",
      "Run a scenario (--scenario FILE): agents that observe a shared world and act on it and on each other, "
      "round by round (docs/simulations.md). Or, as a load generator, run N agents for M turns each, at most "
      "--concurrency turns at a time, through the normal agent loop: against a model server (the model options "
      "of ask), or by default a scripted model that calls --tools-per-turn tools each turn.");
  add_model_options(*simulate, sim_model, false);
  simulate->add_option("--question", sim.question, "Each turn's question; {agent} and {turn} are replaced")
      ->capture_default_str();
  simulate
      ->add_option("--concurrency", sim.concurrency,
                   "Turns in flight at once across all agents (0: every agent at once)")
      ->capture_default_str();
  scenario_command_options scenario_opts;
  CLI::Option* scenario_option =
      simulate->add_option("--scenario", scenario_opts.scenario, "A scenario file (TOML): run it")
          ->check(CLI::ExistingFile);
  simulate->add_option("--events", scenario_opts.events, "With --scenario: write the event log (JSONL) here");
  simulate->add_option("--report", scenario_opts.report, "With --scenario: write an HTML report here");
  simulate->add_flag("--resume", scenario_opts.resume,
                     "With --scenario: continue the run the store holds from its last committed round");
  simulate->add_flag("--estimate", scenario_opts.estimate,
                     "With --scenario: print the model calls, tokens and cost the run will take, and stop");
  CLI::Option* agents_option =
      simulate->add_option("--agents", sim.agents, "How many agents")->check(CLI::PositiveNumber);
  CLI::Option* turns_option =
      simulate->add_option("--turns", sim.turns, "Turns per agent")->check(CLI::NonNegativeNumber);
  agents_option->excludes(scenario_option);
  turns_option->excludes(scenario_option);
  simulate->add_option("--tools-per-turn", sim.tools_per_turn, "Tool calls the scripted model makes per turn")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  simulate->add_option("--threads", sim.scheduler_threads, "Scheduler threads (0: one per core)")
      ->capture_default_str();
  simulate->add_flag("--json", sim_json, "Print one JSON object with the totals instead of text");
  std::uint64_t sim_seed = 0;
  CLI::Option* seed_option = simulate->add_option(
      "--seed", sim_seed,
      "Make the run reproducible: the same ids and thread contents, byte for byte, run to run (entries are "
      "stamped by a logical clock per agent instead of the wall clock)");
  std::string sim_store = "memory:";
  simulate
      ->add_option("--store", sim_store,
                   "Where the agents' threads are kept: memory:, sqlite:PATH[?sync=full] or "
                   "postgres://USER@HOST:PORT/DB; every step is committed there, as in a deployment")
      ->capture_default_str();

  store_command_options threads_opts, conversations_opts;
  CLI::App* threads = add_threads_command(app, threads_opts);
  CLI::App* conversations = add_conversations_command(app, conversations_opts);
  cluster_command_options cluster_opts;
  CLI::App* cluster = add_cluster_command(app, cluster_opts);

  troupe::serve::serve_command_options serve_opts;
  CLI::App* serve = troupe::serve::add_serve_command(app, serve_opts);

  CLI11_PARSE(app, argc, argv);
  try {
    if (ask->parsed()) return run_ask(ask_opts, question, ask_json);
    if (chat->parsed()) return run_chat(chat_opts);
    if (simulate->parsed()) {
      if (scenario_option->count()) {
        if (seed_option->count()) scenario_opts.seed = sim_seed;
        scenario_opts.store = sim_store;
        scenario_opts.threads = sim.scheduler_threads;
        scenario_opts.json = sim_json;
        return run_scenario_command(scenario_opts, sim_model);
      }
      if (!agents_option->count() || !turns_option->count())
        throw usage_error("simulate needs --scenario FILE, or --agents and --turns");
      if (seed_option->count()) sim.seed = sim_seed;
      return run_simulate(sim, sim_model, sim_store, sim_json);
    }
    if (threads->parsed()) return run_threads(threads_opts);
    if (conversations->parsed()) return run_conversations(conversations_opts);
    if (cluster->parsed()) return run_cluster(cluster_opts);
    if (serve->parsed()) return troupe::serve::run_serve(serve_opts);
  } catch (const usage_error& e) {
    std::cerr << "troupe: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "troupe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
