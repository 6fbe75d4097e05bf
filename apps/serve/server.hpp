#pragma once
// `troupe serve` as an object: the agents of a config behind an HTTP API.
//
//   troupe::serve::server s(load_config("serve.toml"));
//   s.routes().add(http::verb::get, "/v1/mine", handler);  // before start()
//   s.observers().add(my_metrics);                          // before start()
//   s.start();            // I/O threads run; returns at once
//   ...
//   s.drain();            // stop accepting, finish or end the turns, close
//
// The server owns a fixed number of I/O threads (config io_threads) that
// run every connection asynchronously, and worker threads for blocking
// work (store calls), so no connection ever has a thread of its own.

#include "apps/serve/auth.hpp"
#include "apps/serve/config.hpp"
#include "apps/serve/deployment.hpp"
#include "apps/serve/observer.hpp"
#include "apps/serve/router.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "apps/serve/turn_registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace troupe::serve {

class listener;
struct connection_context;
class session_registry;
class rate_limiter;
struct route_context;
struct turn_context;

class server {
 public:
  // Opens the store, starts the agents and binds the listen address (port
  // 0: a free one, see port()). Throws config_error, cli::usage_error or
  // std::system_error for what cannot be started.
  explicit server(serve_config config, deployment_options options = {});
  ~server();  // drains if that was not done
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  router& routes() { return routes_; }
  observer_list& observers() { return observers_; }
  boost::asio::thread_pool& workers() { return workers_; }
  deployment& agents() { return *agents_; }
  turn_registry& turns() { return turns_; }
  const serve_config& config() const { return config_; }
  // What GET /metrics exposes (fed by telemetry, the observers and the store).
  const serve_metrics& metrics() const { return *metrics_; }
  std::uint16_t port() const;
  // Client connections open now.
  std::size_t connections() const;
  bool draining() const { return draining_; }

  void start();
  // Stops accepting and closes idle connections; lets running turns finish
  // until the drain deadline, then ends the rest with a shutdown error; sends
  // what is left to send and stops. Idempotent; returns when done.
  void drain();

 private:
  serve_config config_;
  std::shared_ptr<serve_metrics> metrics_ = std::make_shared<serve_metrics>();
  router routes_;
  observer_list observers_;
  key_table keys_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopped_{false};
  turn_registry turns_;
  boost::asio::thread_pool workers_;
  std::unique_ptr<deployment> agents_;
  std::unique_ptr<turn_context> runner_;
  std::unique_ptr<route_context> route_ctx_;
  // Before io_: sessions that die with the I/O context still reach them.
  std::unique_ptr<session_registry> sessions_;
  std::unique_ptr<rate_limiter> rates_;
  std::unique_ptr<connection_context> conn_ctx_;
  boost::asio::io_context io_;
  std::shared_ptr<listener> listener_;
  std::vector<std::thread> io_threads_;
};

}  // namespace troupe::serve
