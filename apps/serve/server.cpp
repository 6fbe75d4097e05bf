#include "apps/serve/server.hpp"

#include "apps/serve/listener.hpp"
#include "apps/serve/metrics_route.hpp"
#include "apps/serve/openai_routes.hpp"
#include "apps/serve/route_context.hpp"
#include "apps/serve/session.hpp"
#include "apps/serve/timed_store.hpp"
#include "apps/serve/web_page.hpp"

#include "runtime/telemetry/fanout_sink.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <iostream>

namespace troupe::serve {

namespace net = boost::asio;

namespace {

// An IP address or a host name. A name with several addresses is bound at
// the first IPv4 one (what clients of "localhost" mostly try first), else the first.
net::ip::tcp::endpoint listen_endpoint(const std::string& host, std::uint16_t port) {
  net::io_context io;
  net::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto found = resolver.resolve(host, std::to_string(port),
                                      net::ip::resolver_base::passive | net::ip::resolver_base::numeric_service, ec);
  if (ec || found.empty()) throw config_error("listen: " + host + " cannot be resolved: " + ec.message());
  for (const auto& e : found)
    if (e.endpoint().address().is_v4()) return e.endpoint();
  return found.begin()->endpoint();
}

}  // namespace

server::server(serve_config config, deployment_options options)
    : config_(std::move(config)),
      keys_(config_.keys),
      workers_(config_.worker_threads),
      io_(static_cast<int>(config_.io_threads)) {
  // The metrics hear the runtime's telemetry beside the server's own sink,
  // and time the store's commits.
  options.telemetry = combined(options.telemetry ? options.telemetry : std::make_shared<log_sink>(false), metrics_);
  // A wrapper the embedder gave (a test's) goes under the timing.
  options.wrap_threads = [m = metrics_, wrap = std::move(options.wrap_threads)](
                             std::shared_ptr<thread_store> s) -> std::shared_ptr<thread_store> {
    if (wrap) s = wrap(std::move(s));
    return std::make_shared<timed_store>(std::move(s), [m](double seconds) { m->store_committed(seconds); });
  };
  observers_.add(metrics_);
  agents_ = std::make_unique<deployment>(config_, std::move(options));
  if (agents_->node()) metrics_->follow_cluster([d = agents_.get()] { return d->cluster_state(); });
  runner_ = std::make_unique<turn_context>(
      turn_context{*agents_, turns_, observers_, workers_, draining_, config_.cluster.dead_after});
  route_ctx_ = std::make_unique<route_context>(route_context{config_, *agents_, turns_, *runner_, workers_, draining_});
  add_message_routes(routes_, *route_ctx_);
  add_conversation_routes(routes_, *route_ctx_);
  add_approval_routes(routes_, *route_ctx_);
  add_service_routes(routes_, *route_ctx_);
  add_openai_routes(routes_, *route_ctx_);
  add_metrics_route(routes_, metrics_);
  add_web_routes(routes_);
  sessions_ = std::make_unique<session_registry>();
  rates_ = std::make_unique<rate_limiter>(config_.limits.requests_per_second, config_.limits.request_burst);
  conn_ctx_ = std::make_unique<connection_context>(
      connection_context{routes_, keys_, config_.limits, observers_, draining_, *sessions_, *rates_});
  listener_ = std::make_shared<listener>(io_, listen_endpoint(config_.host, config_.port), *conn_ctx_);
}

server::~server() { drain(); }

std::uint16_t server::port() const { return listener_->port(); }

std::size_t server::connections() const { return sessions_->size(); }

void server::start() {
  listener_->start();
  for (std::size_t i = 0; i < config_.io_threads; ++i) io_threads_.emplace_back([this] { io_.run(); });
}

void server::drain() {
  if (stopped_.exchange(true)) return;
  draining_ = true;
  listener_->stop();
  sessions_->drain_all();
  const auto deadline = std::chrono::steady_clock::now() + config_.drain_deadline;
  turns_.wait_idle(deadline);
  // A cluster node then hands its shards over (the asks other nodes sent its
  // agents finish or move with them) within what is left of the deadline,
  // given at least two heartbeats: one to say it leaves, one to give up.
  if (agents_->node()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!agents_->leave(std::max(left, 2 * config_.cluster.heartbeat_interval)))
      std::cerr << "troupe serve: the node did not hand all its shards over in time; their leases run out" << std::endl;
  }
  // Whatever still runs ends with a shutdown error, which its clients are sent.
  agents_->shutdown();
  workers_.join();
  // Answers still being written get a moment; a client that does not read is cut off.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sessions_->size() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  io_.stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
}

}  // namespace troupe::serve
