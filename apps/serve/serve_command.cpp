#include "apps/serve/serve_command.hpp"

#include "apps/serve/server.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <csignal>
#include <iostream>
#include <optional>

namespace troupe::serve {

CLI::App* add_serve_command(CLI::App& app, serve_command_options& o) {
  CLI::App* c = app.add_subcommand(
      "serve", "Run the agents of a config file behind an HTTP API (conversations, streaming) until SIGTERM.");
  c->add_option("--config", o.config, "The TOML config: listen address, store, limits, [[agents]], [[keys]]")
      ->required();
  c->add_option("--listen", o.listen, "HOST:PORT to listen on, instead of the config's (port 0: any free one)");
  c->add_option("--cluster", o.cluster,
                "Run as a node of the cluster in this PostgreSQL database (postgres://…), instead of the config's "
                "[cluster] database; the shared secret comes from [cluster] secret_env (TROUPE_CLUSTER_SECRET)");
  return c;
}

namespace {

// Every connection holds a descriptor, and the usual soft limit (1,024) is
// spent before max_connections is reached: the soft limit goes up to the
// hard one, which the operator may raise (ulimit -Hn, LimitNOFILE=).
void raise_open_files_limit(const serve_config& config) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = raised.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  std::cerr << "troupe serve: open files limit " << limit.rlim_cur << " (hard " << limit.rlim_max << ")";
  // The store, the agents' tools and the server itself need some besides the connections.
  constexpr rlim_t besides_connections = 64;
  if (limit.rlim_cur < config.limits.max_connections + besides_connections)
    std::cerr << ": below max_connections (" << config.limits.max_connections
              << ") + 64; clients past it are answered 503";
  std::cerr << std::endl;
}

}  // namespace

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

  auto refused = [](const config_error& e) {
    std::cerr << "troupe serve: refused: " << e.what() << "\n";
    return 2;
  };
  serve_config config;
  try {
    config = load_config(o.config);
    if (!o.listen.empty()) set_listen(config, o.listen);
    if (!o.cluster.empty()) set_cluster(config, o.cluster);
  } catch (const config_error& e) {
    return refused(e);
  }
  raise_open_files_limit(config);
  // What needs the running agents to check (their tools, the listen
  // address) is refused here, as the file's own mistakes are.
  std::optional<server> s;
  try {
    s.emplace(std::move(config));
  } catch (const config_error& e) {
    return refused(e);
  }
  s->start();
  std::cout << "troupe serve: listening on http://" << s->config().host << ":" << s->port() << " with "
            << s->agents().agents().size() << " agent(s)";
  if (const cluster_node* n = s->agents().node())
    std::cout << ", cluster node " << n->id() << " at " << n->address().to_string();
  std::cout << std::endl;
  int received = 0;
  sigwait(&stop_signals, &received);
  std::cerr << "troupe serve: " << (received == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining (up to "
            << s->config().drain_deadline.count() / 1000.0 << " s)" << std::endl;
  s->drain();
  std::cerr << "troupe serve: stopped" << std::endl;
  return 0;
}

}  // namespace troupe::serve
