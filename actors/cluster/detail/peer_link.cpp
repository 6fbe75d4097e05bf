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

#include <map>
#include <unordered_map>

namespace troupe {

namespace {

using namespace wire;

using state_ptr = std::shared_ptr<request::state>;
using steady = std::chrono::steady_clock;
// Each request's deadline, by when it is due; one timer serves them all.
using deadline_table = std::multimap<steady::time_point, std::uint64_t>;

struct outgoing {  // an ask waiting for the connection (its state is in `running`)
  ask_envelope envelope;
  steady::time_point sent;
};

struct running_request {
  state_ptr state;
  bool decides = false;
  bool paused = false;  // its paused reply is out; only a cancel can end it now
  std::optional<deadline_table::iterator> due;
};

struct link_state {
  enum phase_t { idle, connecting, ready } phase = idle;
  caf::actor gateway;
  std::string token;  // the session's, once ready
  // Every request from when it came, while connecting and after.
  std::unordered_map<std::uint64_t, running_request> running;
  std::vector<outgoing> queued;  // while connecting (their requests are in `running` too)
  deadline_table deadlines;
  std::optional<steady::time_point> timer_due;
  bool retired = false;  // out of the node's table: ends once it carries nothing
  static inline const char* name = "troupe_peer_link";
};

using link_actor = guarded_actor<link_state>;

reply failure(const state_ptr& s, const char* type, std::string message) {
  return reply{s->id, error_info::of(type, std::move(message)), {}, 0};
}

caf::behavior peer_link(link_actor* self, peer_settings settings) {
  const std::string where = "the node at " + settings.address.to_string();

  // A retired link ends once it carries nothing (the node sends it nothing more).
  auto quit_if_done = [self] {
    auto& st = self->state;
    if (st.retired && st.running.empty()) self->quit();
  };
  // The link's own timer, armed for the earliest deadline.
  auto arm_timer = [self] {
    auto& st = self->state;
    if (st.deadlines.empty()) return;
    const auto earliest = st.deadlines.begin()->first;
    if (st.timer_due && *st.timer_due <= earliest) return;  // fires in time; it re-arms then
    st.timer_due = earliest;
    self->delayed_send(self, std::max(earliest - steady::now(), steady::duration::zero()), local::link_deadline{});
  };
  auto clear_deadline = [self](running_request& r) {
    if (r.due) self->state.deadlines.erase(*r.due);
    r.due.reset();
  };
  auto set_deadline = [self, arm_timer, clear_deadline](std::uint64_t key, running_request& r, steady::time_point due) {
    clear_deadline(r);
    r.due = self->state.deadlines.emplace(due, key);
    arm_timer();
  };
  auto forget = [self, clear_deadline](std::unordered_map<std::uint64_t, running_request>::iterator it) {
    clear_deadline(it->second);
    self->state.running.erase(it);
  };
  // Ends the request `key` with `r` (a final reply removes it; a paused one
  // keeps it for a cancel). A decision's answer ends the pauses of its
  // request this link still keeps: nothing can cancel those any more.
  auto settle = [self, forget, clear_deadline, quit_if_done](std::uint64_t key, reply r) {
    auto& st = self->state;
    auto it = st.running.find(key);
    if (it == st.running.end()) return;
    auto s = it->second.state;
    if (it->second.decides && !std::holds_alternative<error_info>(r.outcome)) {
      std::vector<std::uint64_t> ended;
      for (const auto& [other, o] : st.running)
        if (other != key && o.paused && o.state->id == s->id) ended.push_back(other);
      for (const std::uint64_t other : ended) forget(st.running.find(other));
    }
    it = st.running.find(key);
    if (r.paused()) {
      it->second.paused = true;
      clear_deadline(it->second);
    } else {
      forget(it);
    }
    s->settle(std::move(r));
    quit_if_done();
  };
  // Ends every request that went (or was going) to the other node.
  auto fail_all = [self, forget, quit_if_done](const char* type, const std::string& message, bool also_paused) {
    auto& st = self->state;
    st.queued.clear();
    std::vector<state_ptr> ending;
    for (auto it = st.running.begin(); it != st.running.end();) {
      auto next = std::next(it);
      // Paused requests cannot be cancelled there any more: their handles keep the paused reply.
      if (!it->second.paused || also_paused) ending.push_back(it->second.state);
      forget(it);
      it = next;
    }
    for (auto& s : ending) s->settle(failure(s, type, message));
    quit_if_done();
  };
  // Once disconnected the link leaves the node's table (a peer's address
  // may never be used again: a restarted node listens on another port);
  // what the node sent it before still runs, and the next ask to that
  // address gets a link of its own.
  auto disconnect = [self, settings] {
    auto& st = self->state;
    st.gateway = caf::actor();
    st.token.clear();
    st.phase = link_state::idle;
    if (settings.retire) settings.retire(self->address());
  };
  // The ask goes out; its deadline runs from when it came to the link: one
  // the caller set already does, the agent's own (which the other node
  // tells) is set once it took the ask.
  auto send_ask = [self, settle, set_deadline, settings, where](outgoing o) {
    auto& st = self->state;
    const std::uint64_t key = o.envelope.key;
    const bool has_deadline = o.envelope.deadline_ms > 0;
    self->request(st.gateway, settings.connect_timeout, rask_atom::value, st.token, std::move(o.envelope))
        .then(
            [self, settle, set_deadline, key, settings, has_deadline, sent = o.sent](
                std::string& type, std::string& message, std::int64_t deadline_ms) {
              auto& st = self->state;
              auto it = st.running.find(key);
              if (it == st.running.end()) return;
              if (!type.empty()) {
                settle(key, failure(it->second.state, type.c_str(), std::move(message)));
                return;
              }
              if (!has_deadline && !it->second.paused)
                set_deadline(key, it->second, sent + std::chrono::milliseconds(deadline_ms) + settings.reply_grace);
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
    for (auto& o : queued)
      if (self->state.running.count(o.envelope.key)) send_ask(std::move(o));  // not cancelled or overdue meanwhile
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
      [self, connect, send_ask, set_deadline, settings](local::link_ask& ask) {
        auto& st = self->state;
        const auto now = steady::now();
        const std::uint64_t key = ask.envelope.key;
        auto [slot, _] = st.running.insert_or_assign(
            key, running_request{std::move(ask.state), ask.envelope.kind == ask_envelope::decide, false, std::nullopt});
        if (ask.envelope.deadline_ms > 0)
          set_deadline(key, slot->second,
                       now + std::chrono::milliseconds(ask.envelope.deadline_ms) + settings.reply_grace);
        outgoing o{std::move(ask.envelope), now};
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
            st.queued.erase(it);
            settle(key, failure(st.running.at(key).state, error_type::cancelled, std::move(reason)));
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
          self->send(st.gateway, rcancel_atom::value, st.token, e.key, std::string("a callback of the request threw"));
          settle(e.key,
                 reply{s->id,
                       error_info::of(error_type::callback_failed, "a callback of the request threw: " + *thrown),
                       {},
                       0});
        }
      },
      [self, settle, arm_timer, where](local::link_deadline) {
        auto& st = self->state;
        st.timer_due.reset();
        const auto now = steady::now();
        std::vector<std::uint64_t> overdue;
        for (auto it = st.deadlines.begin(); it != st.deadlines.end() && it->first <= now; ++it)
          overdue.push_back(it->second);
        for (const std::uint64_t key : overdue) {
          auto it = st.running.find(key);
          if (it == st.running.end()) continue;
          std::erase_if(st.queued, [key](const outgoing& o) { return o.envelope.key == key; });
          if (st.phase == link_state::ready)
            self->send(st.gateway, rcancel_atom::value, st.token, key, std::string("no end within the deadline"));
          settle(key, failure(it->second.state, error_type::node_lost,
                              where + " said nothing of the request's end within its deadline"));
        }
        arm_timer();
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
      [self, quit_if_done](local::link_retire) {
        self->state.retired = true;
        quit_if_done();
      },
  };
}

}  // namespace

caf::actor spawn_peer_link(caf::actor_system& sys, peer_settings settings) {
  return sys.spawn(peer_link, std::move(settings));
}

}  // namespace troupe
