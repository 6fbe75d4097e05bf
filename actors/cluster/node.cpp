#include "actors/cluster/node.hpp"

#include "actors/cluster/detail/local_messages.hpp"
#include "actors/cluster/detail/node_impl.hpp"
#include "actors/cluster/detail/wire.hpp"
#include "actors/detail/protocols.hpp"
#include "actors/detail/request_state.hpp"
#include "runtime/random_ids.hpp"

#include <caf/openssl/all.hpp>

#include <fstream>
#include <stdexcept>

namespace troupe {

namespace {

using namespace wire;

std::string key_of(const node_address& a) { return a.to_string(); }

void must_read(const std::string& path, const char* what) {
  if (path.empty() || !std::ifstream(path))
    throw std::invalid_argument("cannot read the node's TLS " + std::string(what) + " " + path);
}

}  // namespace

node::impl::impl(runtime::impl& r, node_options o) : options(std::move(o)), rt(r) {
  if (options.secret.empty())
    throw std::invalid_argument("a node needs the cluster's shared secret (node_options::secret)");
  if (options.build_id.empty()) options.build_id = cluster_build_id();
  config.load<caf::io::middleman>();
  register_wire_types(config);
  config.set("logger.console", caf::atom("none"));
  config.set("scheduler.max-threads", std::max<std::size_t>(1, options.threads));
  // The middleman compares these in its handshake and refuses a node whose
  // set differs: builds that would misread each other's messages never talk.
  config.set("middleman.app-identifiers", std::vector<std::string>{options.build_id});
  config.set("middleman.heartbeat-interval", caf::timespan{options.heartbeat_interval});
  if (options.tls) {
    must_read(options.tls->certificate, "certificate");
    must_read(options.tls->key, "key");
    must_read(options.tls->ca_file, "CA file");
    // With a CA file, CAF's OpenSSL layer asks the other side for a
    // certificate that CA signed, on both ends of a connection.
    config.load<caf::openssl::manager>();
    config.openssl_certificate = options.tls->certificate;
    config.openssl_key = options.tls->key;
    config.openssl_cafile = options.tls->ca_file;
    config.openssl_passphrase = options.tls->passphrase;
  }
  system = std::make_unique<caf::actor_system>(config);
  gateway = spawn_gateway(*system, rt, options.secret, gate);
  if (options.listen_port) {
    auto port = options.tls
                    ? caf::openssl::publish(gateway, *options.listen_port, options.listen_host.c_str(), true)
                    : system->middleman().publish(gateway, *options.listen_port, options.listen_host.c_str(), true);
    if (!port) {
      const std::string why = system->render(port.error());
      caf::anon_send(gateway, local::gateway_stop{});
      throw std::runtime_error("cannot listen on " + options.listen_host + ":" + std::to_string(*options.listen_port) +
                               ": " + why);
    }
    address = node_address{options.listen_host, *port};
  }
}

node::impl::~impl() {
  close();
  system.reset();
}

caf::actor_addr node::impl::send_to_link(const node_address& peer, caf::message message) {
  std::lock_guard lock(links_mutex);
  if (closed) return {};
  auto& link = links[key_of(peer)];
  if (!link) {
    peer_settings settings{peer,
                           options.secret,
                           options.build_id,
                           options.connect_timeout,
                           options.reply_grace,
                           options.tls.has_value(),
                           [this](const caf::actor_addr& l) { retire(l); }};
    link = spawn_peer_link(*system, std::move(settings));
  }
  caf::anon_send(link, std::move(message));
  return link.address();
}

void node::impl::retire(const caf::actor_addr& link) {
  std::lock_guard lock(links_mutex);
  for (auto it = links.begin(); it != links.end(); ++it)
    if (it->second.address() == link) {
      caf::anon_send(it->second, local::link_retire{});
      links.erase(it);
      return;
    }
}

void node::impl::close() {
  std::map<std::string, caf::actor> ending;
  {
    std::lock_guard lock(links_mutex);
    if (closed) return;
    closed = true;
    ending.swap(links);
  }
  {
    caf::scoped_actor self{*system};
    const auto patience = std::chrono::seconds(10);
    if (address) system->middleman().unpublish(gateway, address->port);
    // Requests run here for other nodes first: cancelled, and their ends sent.
    self->request(gateway, patience, local::gateway_close{}).receive([](bool) {}, [](caf::error&) {});
    {
      std::unique_lock lock(gate->mutex);
      gate->open = false;
    }
    for (auto& [where, link] : ending)
      self->request(link, patience, local::link_close{}).receive([](bool) {}, [](caf::error&) {});
    self->send(gateway, local::gateway_stop{});
  }
  system->await_all_actors_done();
}

node::node(runtime& rt, node_options options) : impl_(std::make_shared<impl>(rt.internals(), std::move(options))) {}

node::~node() {
  impl_->close();
  // Handles still inside a call hold a reference of their own; the actor
  // system ends here, on the thread that made it (as the runtime's does).
  while (impl_.use_count() > 1) std::this_thread::yield();
  impl_.reset();
}

std::optional<node_address> node::address() const { return impl_->address; }

remote_agent node::agent_at(const node_address& peer, std::string agent_id) {
  auto l = std::make_shared<remote_agent::link>();
  l->owner = impl_;
  return remote_agent(std::move(l), peer, std::move(agent_id));
}

void node::close() { impl_->close(); }

node_counts node::counts() const {
  node_counts c;
  {
    std::lock_guard lock(impl_->links_mutex);
    if (impl_->closed) return c;
    c.links = impl_->links.size();
  }
  caf::scoped_actor self{*impl_->system};
  self->request(impl_->gateway, std::chrono::seconds(10), local::count_requests{})
      .receive([&](std::size_t n) { c.requests = n; }, [](caf::error&) {});
  return c;
}

// --- remote_agent ----------------------------------------------------------------

namespace {

reply refused(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

request send_to(const std::weak_ptr<node::impl>& weak, const node_address& peer, std::shared_ptr<request::state> s,
                ask_envelope envelope) {
  request handle(s);
  auto n = weak.lock();
  if (!n) {
    s->settle(refused(s->id, error_type::shutdown, "the node is closed"));
    return handle;
  }
  const std::uint64_t key = n->next_key++;
  envelope.key = key;
  // The cancel goes to the link that carries the request (the address
  // may have a link of its own by then).
  auto carrier = std::make_shared<caf::actor_addr>();
  s->cancel_elsewhere = [carrier, key](std::string reason) {
    if (auto link = caf::actor_cast<caf::actor>(*carrier))
      caf::anon_send(link, local::link_cancel{key, std::move(reason)});
  };
  auto state = s;
  *carrier = n->send_to_link(peer, caf::make_message(local::link_ask{std::move(envelope), std::move(state)}));
  if (!*carrier) s->settle(refused(s->id, error_type::shutdown, "the node is closed"));
  return handle;
}

std::shared_ptr<request::state> new_state(std::string id, const std::string& agent_id, ask_options& options) {
  auto s = std::make_shared<request::state>();
  s->id = std::move(id);
  s->agent_id = agent_id;
  s->thread_id = options.thread_id;
  s->on_event = std::move(options.on_event);
  s->on_reply = std::move(options.on_reply);
  return s;
}

ask_envelope envelope_of(const std::string& agent_id, const std::string& request_id, ask_options& options,
                         bool stream) {
  ask_envelope e;
  e.agent_id = agent_id;
  e.request_id = request_id;
  e.thread_id = std::move(options.thread_id);
  e.traceparent = std::move(options.traceparent);
  if (options.deadline) e.deadline_ms = std::max<std::int64_t>(1, options.deadline->count());
  e.stream = stream;
  e.outlives_caller = options.outlives_caller;
  e.retry = options.retry;
  return e;
}

}  // namespace

request remote_agent::ask(std::string question, ask_options options) const {
  // The id is made here: the handle needs it before the other node answers.
  thread_local random_ids request_ids;
  std::string id = options.request_id.empty() ? request_ids.next("req") : std::move(options.request_id);
  auto s = new_state(id, id_, options);
  ask_envelope e = envelope_of(id_, id, options, static_cast<bool>(s->on_event));
  e.kind = ask_envelope::ask;
  e.question = std::move(question);
  e.overrides = to_json(options.overrides);
  e.observation = std::move(options.observation);
  return send_to(link_->owner, address_, std::move(s), std::move(e));
}

request remote_agent::decide(decision d, ask_options options) const {
  auto s = new_state(d.request_id, id_, options);
  ask_envelope e = envelope_of(id_, d.request_id, options, static_cast<bool>(s->on_event));
  e.kind = ask_envelope::decide;
  e.decided = std::move(d);
  return send_to(link_->owner, address_, std::move(s), std::move(e));
}

}  // namespace troupe
