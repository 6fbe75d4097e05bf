#pragma once
// The node facade's insides: its own actor system (with CAF's middleman),
// the gateway other nodes ask, and one link actor per node it asks.

#include "actors/cluster/node.hpp"
#include "actors/detail/runtime_impl.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace troupe {

// Whether the node's actor system still takes messages. Callbacks that run
// on the runtime's threads (a request's events for another node) hold it
// shared while they send; close() takes it to end them before the actor
// system goes.
struct node_gate {
  std::shared_mutex mutex;
  bool open = true;
};

struct node::impl {
  impl(runtime::impl& rt, node_options options);
  ~impl();
  void close();
  // Sends an ask to the link to `peer`, started on first use: the link's
  // address, none once closed. Sent under the table's lock, so that a link
  // the node retires meanwhile gets it before its retirement.
  caf::actor_addr send_to_link(const node_address& peer, caf::message message);
  // Called by a link that disconnected: out of the table, and told so.
  void retire(const caf::actor_addr& link);

  node_options options;
  runtime::impl& rt;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor gateway;
  std::optional<node_address> address;
  std::shared_ptr<node_gate> gate = std::make_shared<node_gate>();
  std::atomic<std::uint64_t> next_key{1};
  std::mutex links_mutex;
  std::map<std::string, caf::actor> links;  // by "host:port", those not retired
  bool closed = false;                      // under links_mutex
};

struct remote_agent::link {
  std::weak_ptr<node::impl> owner;
};

// The actor other nodes ask (published on the node's port).
caf::actor spawn_gateway(caf::actor_system& sys, runtime::impl& rt, std::string secret,
                         std::shared_ptr<node_gate> gate);

struct peer_settings {
  node_address address;
  std::string secret;
  std::string build_id;
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds reply_grace;
  bool tls = false;
  std::function<void(const caf::actor_addr& link)> retire;  // the node's
};

// The actor that carries this node's requests to the node at one address:
// it connects, proves the secret, sends asks and cancels, and turns the
// events that come back into the requests' callbacks.
caf::actor spawn_peer_link(caf::actor_system& sys, peer_settings settings);

}  // namespace troupe
