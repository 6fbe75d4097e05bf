#include "apps/serve/serve_command.hpp"

#include "apps/serve/server.hpp"

#include <pthread.h>
#include <csignal>
#include <iostream>

namespace troupe::serve {

CLI::App* add_serve_command(CLI::App& app, serve_command_options& o) {
  CLI::App* c = app.add_subcommand(
      "serve", "Run the agents of a config file behind an HTTP API (conversations, streaming) until SIGTERM.");
  c->add_option("--config", o.config, "The TOML config: listen address, store, limits, [[agents]], [[keys]]")
      ->required();
  c->add_option("--listen", o.listen, "HOST:PORT to listen on, instead of the config's (port 0: any free one)");
  return c;
}

int run_serve(const serve_command_options& o) {
  // Every thread the server starts inherits this mask, so the signals reach
  // only the sigwait below.
  // A shell starts background jobs with SIGINT ignored, and an ignored
  // signal never reaches sigwait.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  serve_config config;
  try {
    config = load_config(o.config);
    if (!o.listen.empty()) set_listen(config, o.listen);
  } catch (const config_error& e) {
    std::cerr << "troupe serve: refused: " << e.what() << "\n";
    return 2;
  }
  server s(std::move(config));
  s.start();
  std::cout << "troupe serve: listening on http://" << s.config().host << ":" << s.port() << " with "
            << s.agents().agents().size() << " agent(s)" << std::endl;
  int received = 0;
  sigwait(&stop_signals, &received);
  std::cerr << "troupe serve: " << (received == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining (up to "
            << s.config().drain_deadline.count() / 1000.0 << " s)" << std::endl;
  s.drain();
  std::cerr << "troupe serve: stopped" << std::endl;
  return 0;
}

}  // namespace troupe::serve
