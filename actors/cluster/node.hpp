#pragma once
// A runtime as a node of a cluster: it accepts asks for its agents from
// other nodes, and asks agents that other nodes hold, over TCP (CAF's
// network layer), without including CAF.
//
//   troupe::node n(rt, {.secret = shared_secret, .listen_port = 4100});
//   troupe::remote_agent far = n.agent_at({"10.0.0.2", 4100}, "helper");
//   troupe::request r = far.ask("What is 2 + 2?");   // as agent::ask
//
// A remote request behaves as a local one: the same stream events in the
// same order, the same reply and errors, cancel reaches the request where it
// runs, and the caller's traceparent goes with the ask. What a local request
// cannot meet: the other node's connection drops or its process dies while
// the request runs, and the request ends with node_lost, at once; a node
// that answers nothing past the request's deadline (plus reply_grace) is
// taken for lost too. Nodes prove to each other that they know the shared
// secret before any ask is taken (HMAC-SHA256 challenges both ways), may
// also use TLS with certificates from the cluster's CA (node_tls), and
// nodes of different builds cannot connect at all (incompatible_build):
// their messages could not be read.

#include "actors/runtime.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace troupe {

// What nodes compare before they exchange anything: troupe's and CAF's
// versions, a digest of the wire's sources (actors/cluster/detail/wire.hpp and
// the headers it includes, taken at build time) and the tag the build was
// configured with (TROUPE_CLUSTER_BUILD_ID, empty by default). Builds whose
// messages are the same talk, whatever else changed between them.
std::string cluster_build_id();

struct node_address {
  std::string host;
  std::uint16_t port = 0;

  std::string to_string() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const node_address&, const node_address&) = default;
};

// TLS between nodes: every node has a certificate signed by the cluster's
// CA, and takes (and reaches) only nodes whose certificate that CA signed.
// Paths of PEM files, as a config file names them.
struct node_tls {
  std::string certificate;   // this node's certificate
  std::string key;           // its private key
  std::string ca_file;       // the cluster's CA certificate
  std::string passphrase{};  // the key's, if it has one
};

struct node_options {
  // Shared by every node of the cluster; required (a node refuses to start
  // without one). Nodes that do not share it refuse each other.
  std::string secret;
  // Set: other nodes may ask this node's agents, on this port (0: any free
  // one; node::address() tells which). Unset: the node only asks.
  std::optional<std::uint16_t> listen_port{};
  std::string listen_host = "127.0.0.1";
  // Empty: cluster_build_id(). Nodes with different ids refuse each other.
  std::string build_id{};
  // Connecting, proving the secret, and a node's first answer to an ask
  // must each take no longer than this, or the request ends with node_lost.
  std::chrono::milliseconds connect_timeout{5'000};
  // A request whose node has said nothing of its end this long after its
  // deadline ends with node_lost (the node is stuck, or the network is).
  std::chrono::milliseconds reply_grace{10'000};
  // How often connections carry a heartbeat; a silent peer is detected by
  // the operating system's TCP, or by the deadline above.
  std::chrono::milliseconds heartbeat_interval{1'000};
  std::size_t threads = 2;  // for the node's own actors
  // Set: connections are TLS (CAF's OpenSSL layer), encrypted and
  // authenticated by certificate, besides the secret's handshake. Nodes with
  // and without TLS cannot talk.
  std::optional<node_tls> tls{};
};

// An agent that another node holds, by id. Copies share the connection.
class remote_agent {
 public:
  const std::string& id() const { return id_; }
  const node_address& address() const { return address_; }
  // As agent::ask and agent::decide (actors/runtime.hpp).
  request ask(std::string question, ask_options options = {}) const;
  request decide(decision d, ask_options options = {}) const;

  struct link;
  remote_agent(std::shared_ptr<link> l, node_address a, std::string id)
      : link_(std::move(l)), address_(std::move(a)), id_(std::move(id)) {}

 private:
  std::shared_ptr<link> link_;
  node_address address_;
  std::string id_;
};

// What a node holds now, for metrics and tests.
struct node_counts {
  std::size_t links = 0;     // to other nodes, one an address, until its connection ended
  std::size_t requests = 0;  // run here for other nodes, paused ones included
};

class node {
 public:
  // Throws std::invalid_argument without a secret or with a TLS file it
  // cannot read, std::runtime_error when it cannot listen. The node must end before `rt` does.
  node(runtime& rt, node_options options);
  ~node();  // closes if that was not done
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // Where other nodes reach this one; nullopt when it does not listen.
  std::optional<node_address> address() const;
  // The agent `agent_id` of the node at `peer`. Connects on the first ask.
  remote_agent agent_at(const node_address& peer, std::string agent_id);
  // Stops listening and drops every connection: requests this node runs
  // for others are cancelled, and requests it sent elsewhere end with
  // "shutdown". Idempotent.
  void close();
  // Zeros once closed.
  node_counts counts() const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace troupe
