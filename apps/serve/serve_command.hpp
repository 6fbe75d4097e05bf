#pragma once
// `troupe serve --config FILE [--listen HOST:PORT] [--cluster postgres://…]`.

#include <CLI/CLI.hpp>

#include <string>

namespace troupe::serve {

struct serve_command_options {
  std::string config;
  std::string listen;
  std::string cluster;  // the cluster's database, over the config's [cluster] database
};

CLI::App* add_serve_command(CLI::App& app, serve_command_options& o);
// Serves until SIGTERM or SIGINT, then drains; 0 after a drain, 2 for a bad config.
int run_serve(const serve_command_options& o);

}  // namespace troupe::serve
