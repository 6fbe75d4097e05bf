#pragma once
// The troupe subcommands. Each returns the process's exit code: 0 done,
// 1 the request failed, 2 a usage error.

#include "actors/simulation.hpp"
#include "apps/model_options.hpp"

#include <string>

namespace troupe::cli {

int run_ask(const model_options& o, const std::string& question, bool as_json);
int run_chat(const model_options& o);
int run_simulate(simulation_options options, const model_options& model, bool as_json);

}  // namespace troupe::cli
