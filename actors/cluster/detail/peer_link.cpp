// A node's link to another node: every request this node sends there goes
// through it. It connects on the first ask (CAF's middleman, which refuses
// a node of another build), checks that the other node knows the secret
// and proves that it does, then sends the asks it queued meanwhile. Events
// that come back drive the requests' callbacks, as a broker's do locally.
// When the connection drops, every request that ran there ends with
// node_lost; the next ask connects again (and proves itself again).
// Only the node's own actors control a link (local_messages.hpp); from the
// other node it takes only events that name the handshake's token.

#include "actors/cluster/detail/guarded_actor.hpp"
#include "actors/cluster/detail/handshake.hpp"
#include "actors/cluster/detail/local_messages.hpp"
#include "actors/cluster/detail/node_impl.hpp"
#include "actors/cluster/detail/wire.hpp"
#include "actors/detail/protocols.hpp"
#include "actors/detail/request_state.hpp"

#include <caf/openssl/all.hpp>

#include <unordered_map>

namespace troupe {

namespace {

using namespace wire;

using state_ptr = std::shared_ptr<request::state>;

struct outgoing {
  ask_envelope envelope;
  state_ptr state;
};

struct running_request {
  state_ptr state;
  bool paused = false;  // its paused reply is out; only a cancel can end it now
};

struct link_state {
  enum phase_t { idle, connecting, ready } phase = idle;
  caf::actor gateway;
  std::string token;             // the session's, once ready
  std::vector<outgoing> queued;  // while connecting
  std::unordered_map<std::uint64_t, running_request> running;
  static inline const char* name = "troupe_peer_link";
};

using link_actor = guarded_actor<link_state>;

reply failure(const state_ptr& s, const char* type, std::string message) {
  return reply{s->id, error_info::of(type, std::move(message)), {}, 0};
}

caf::behavior peer_link(link_actor* self, peer_settings settings) {
  const std::string where = "the node at " + settings.address.to_string();

  // Ends the request `key` with `r` (a final reply removes it; a paused one
  // keeps it for a cancel).
  auto settle = [self](std::uint64_t key, reply r) {
    auto& st = self->state;
    auto it = st.running.find(key);
    if (it == st.running.end()) return;
    const bool paused = r.paused();
    auto s = it->second.state;
    if (paused)
      it->second.paused = true;
    else
      st.running.erase(it);
    s->settle(std::move(r));
  };
  // Ends every request that went (or was going) to the other node.
  auto fail_all = [self, settle](const char* type, const std::string& message, bool also_paused) {
    auto& st = self->state;
    auto queued = std::move(st.queued);
    st.queued.clear();
    for (auto& o : queued) o.state->settle(failure(o.state, type, message));
    std::vector<std::uint64_t> keys;
    for (auto& [key, r] : st.running)
      if (!r.paused || also_paused) keys.push_back(key);
    for (auto key : keys) settle(key, failure(st.running.at(key).state, type, message));
    // Paused requests cannot be cancelled there any more: their handles keep the paused reply.
    st.running.clear();
  };
  auto disconnect = [self] {
    auto& st = self->state;
    st.gateway = caf::actor();
    st.token.clear();
    st.phase = link_state::idle;
  };
  auto send_ask = [self, settle, settings, where](outgoing o) {
    auto& st = self->state;
    const std::uint64_t key = o.envelope.key;
    st.running.insert_or_assign(key, running_request{std::move(o.state)});
    self->request(st.gateway, settings.connect_timeout, rask_atom::value, st.token, std::move(o.envelope))
        .then(
            [self, settle, key, settings](std::string& type, std::string& message, std::int64_t deadline_ms) {
              auto& st = self->state;
              auto it = st.running.find(key);
              if (it == st.running.end()) return;
              if (!type.empty()) {
                settle(key, failure(it->second.state, type.c_str(), std::move(message)));
                return;
              }
              self->delayed_send(self, std::chrono::milliseconds(deadline_ms) + settings.reply_grace,
                                 local::link_deadline{key});
            },
            [self, settle, key, where](caf::error& e) {
              auto it = self->state.running.find(key);
              if (it == self->state.running.end()) return;
              settle(key, failure(it->second.state, error_type::node_lost,
                                  where + " did not take the request: " + self->system().render(e)));
            });
  };
  auto refuse = [fail_all, disconnect](const std::string& why) {
    disconnect();
    fail_all(error_type::node_refused, why, false);
  };
  auto connection_failed = [self, fail_all, disconnect, settings, where](const caf::error& e) {
    disconnect();
    if (e == caf::sec::incompatible_application_ids)
      fail_all(error_type::incompatible_build,
               where + " runs another build of troupe (this one is \"" + settings.build_id +
                   "\"): nodes of different builds cannot read each other's messages",
               false);
    else if (settings.tls && e == caf::sec::disconnect_during_handshake)
      fail_all(error_type::node_refused,
               "the TLS handshake with " + where +
                   " failed: one of the two certificates is not signed by the cluster's CA, or that node does not "
                   "use TLS",
               false);
    else
      fail_all(error_type::node_lost, "cannot reach " + where + ": " + self->system().render(e), false);
  };
  auto flush = [self, send_ask] {
    auto queued = std::move(self->state.queued);
    self->state.queued.clear();
    for (auto& o : queued) send_ask(std::move(o));
  };
  // Connect, check the other node's proof, send ours, then the queued asks.
  auto connect = [self, settings, where, refuse, connection_failed, flush] {
    auto& st = self->state;
    st.phase = link_state::connecting;
    auto mm =
        settings.tls ? self->system().openssl_manager().actor_handle() : self->system().middleman().actor_handle();
    self->request(mm, settings.connect_timeout, caf::connect_atom::value, settings.address.host, settings.address.port)
        .then(
            [=](const caf::node_id& gateway_node, caf::strong_actor_ptr& gateway, const std::set<std::string>&) {
              if (!gateway) {
                connection_failed(caf::make_error(caf::sec::no_actor_published_at_port));
                return;
              }
              self->state.gateway = caf::actor_cast<caf::actor>(gateway);
              // The proxy ends with the connection. Not a monitor: a
              // down_msg is something any peer can send.
              gateway->get()->attach_functor(
                  [link = self->address(), g = self->state.gateway.address()](const caf::error& reason) {
                    if (auto l = caf::actor_cast<caf::actor>(link)) caf::anon_send(l, local::gateway_lost{g, reason});
                  });
              auto ours = handshake::nonce();
              auto ids = std::make_shared<std::pair<std::string, std::string>>(
                  caf::to_string(self->home_system().node()), caf::to_string(gateway_node));
              self->request(self->state.gateway, settings.connect_timeout, hello_atom::value, ours)
                  .then(
                      [=](std::string& theirs, std::string& their_proof) {
                        const handshake::transcript t{ids->first, ids->second, ours, theirs};
                        if (!handshake::is_nonce(theirs) ||
                            !handshake::same(their_proof, handshake::gateway_proof(settings.secret, t))) {
                          refuse(where + " does not know this cluster's secret");
                          return;
                        }
                        self->request(self->state.gateway, settings.connect_timeout, proof_atom::value, theirs,
                                      handshake::caller_proof(settings.secret, t))
                            .then(
                                [=](bool accepted) {
                                  if (!accepted) {
                                    refuse(where + " refused this node: it does not share the cluster's secret");
                                    return;
                                  }
                                  self->state.token = handshake::session_token(settings.secret,
                                                                               {ids->first, ids->second, ours, theirs});
                                  self->state.phase = link_state::ready;
                                  flush();
                                },
                                connection_failed);
                      },
                      connection_failed);
            },
            connection_failed);
  };

  self->set_default_handler(ignore_unexpected);

  return {
      [self, connect, send_ask](local::link_ask& ask) {
        auto& st = self->state;
        outgoing o{std::move(ask.envelope), std::move(ask.state)};
        if (st.phase == link_state::ready) {
          send_ask(std::move(o));
          return;
        }
        st.queued.push_back(std::move(o));
        if (st.phase == link_state::idle) connect();
      },
      [self, settle](local::link_cancel& cancel) {
        auto& st = self->state;
        const std::uint64_t key = cancel.key;
        std::string& reason = cancel.reason;
        for (auto it = st.queued.begin(); it != st.queued.end(); ++it)
          if (it->envelope.key == key) {
            auto s = std::move(it->state);
            st.queued.erase(it);
            s->settle(failure(s, error_type::cancelled, std::move(reason)));
            return;
          }
        if (st.running.count(key) && st.phase == link_state::ready)
          self->send(st.gateway, rcancel_atom::value, st.token, key, std::move(reason));
      },
      [self, settle](revent_atom, const std::string& token, event_envelope& e) {
        auto& st = self->state;
        // Events from anyone but the gateway this link proved itself to
        // (its token: the sender of a remote message proves nothing) are
        // not for it.
        if (st.phase != link_state::ready || !handshake::same(token, st.token)) return;
        auto it = st.running.find(e.key);
        if (it == st.running.end()) return;
        if (auto* end = std::get_if<request_finished_event>(&e.event)) {
          settle(e.key, std::move(end->result));
          return;
        }
        auto s = it->second.state;
        if (!s->on_event) return;
        if (auto thrown = s->notify(e.event)) {
          st.running.erase(it);
          s->settle(reply{s->id,
                          error_info::of(error_type::callback_failed, "a callback of the request threw: " + *thrown),
                          {},
                          0});
          self->send(st.gateway, rcancel_atom::value, st.token, e.key, std::string("a callback of the request threw"));
        }
      },
      [self, settle, where](local::link_deadline deadline) {
        auto& st = self->state;
        const std::uint64_t key = deadline.key;
        auto it = st.running.find(key);
        if (it == st.running.end() || it->second.paused) return;
        if (st.phase == link_state::ready)
          self->send(st.gateway, rcancel_atom::value, st.token, key, std::string("no end within the deadline"));
        settle(key, failure(it->second.state, error_type::node_lost,
                            where + " said nothing of the request's end within its deadline"));
      },
      [self, where, fail_all, disconnect](local::gateway_lost& lost) {
        if (!self->state.gateway || lost.gateway != self->state.gateway.address()) return;
        disconnect();
        fail_all(error_type::node_lost,
                 "lost the connection to " + where + " (" + self->system().render(lost.reason) + ")", false);
      },
      [self, fail_all, disconnect](local::link_close) {
        fail_all(error_type::shutdown, "the node is closed", true);
        disconnect();
        self->quit();
        return true;
      },
  };
}

}  // namespace

caf::actor spawn_peer_link(caf::actor_system& sys, peer_settings settings) {
  return sys.spawn(peer_link, std::move(settings));
}

}  // namespace troupe
