// The gateway: what another node's asks meet. It takes asks only from the
// link actors that proved they know the secret (and name the token their
// handshake gave), runs them as local asks of this runtime, and sends every
// stream event back to the asking link. Its own control (close, a request's
// end, a caller gone) comes in local-only messages (local_messages.hpp).

#include "actors/cluster/detail/guarded_actor.hpp"
#include "actors/cluster/detail/handshake.hpp"
#include "actors/cluster/detail/local_messages.hpp"
#include "actors/cluster/detail/node_impl.hpp"
#include "actors/cluster/detail/wire.hpp"
#include "actors/detail/protocols.hpp"

#include <unordered_map>

namespace troupe {

namespace {

using namespace wire;

// Open handshakes (a hello without its proof yet) cost the gateway memory
// and anyone connected can send hellos: so few per node, a bound in all,
// and an open one is dropped once it is older than any caller waits.
constexpr std::size_t max_open_per_node = 4;
constexpr std::size_t max_open = 1024;
constexpr auto open_lifetime = std::chrono::seconds(60);

struct running_request {
  request handle;
  bool outlives_caller = false;
  bool paused = false;  // kept for a cancel until a decision of its request answered
};

struct challenge {
  caf::actor_addr caller;  // the actor that said hello: only it may prove
  caf::node_id node;
  std::string caller_nonce;
  std::chrono::steady_clock::time_point opened;
};

// What a proven caller holds: the token its asks and cancels name, and
// the actor its events go to.
struct session {
  std::string token;
  caf::actor caller;
};

struct gateway_state {
  std::map<std::string, challenge> open;  // by the gateway's nonce
  // By the actor that proved (a link of another node). A new connection
  // is a new proxy, a new actor here: it proves again.
  std::map<caf::actor_addr, session> sessions;
  // By the link that asked (so that a node's end cancels its requests), then by key.
  std::map<caf::actor_addr, std::unordered_map<std::uint64_t, running_request>> running;
  std::optional<caf::response_promise> closing;
  static inline const char* name = "troupe_gateway";
};

using gateway_actor = guarded_actor<gateway_state>;

bool nothing_running(const gateway_state& st) {
  for (const auto& [caller, requests] : st.running)
    if (!requests.empty()) return false;
  return true;
}

// The session of the sender if it proved itself and names its token.
const session* session_of(const gateway_state& st, const caf::strong_actor_ptr& sender, const std::string& token) {
  if (!sender) return nullptr;
  auto it = st.sessions.find(caf::actor_cast<caf::actor_addr>(sender));
  if (it == st.sessions.end() || !handshake::same(token, it->second.token)) return nullptr;
  return &it->second;
}

void drop_expired(gateway_state& st, std::chrono::steady_clock::time_point now) {
  for (auto it = st.open.begin(); it != st.open.end();)
    it = now - it->second.opened > open_lifetime ? st.open.erase(it) : std::next(it);
}

caf::error refused(std::string why) { return caf::make_error(caf::sec::runtime_error, std::move(why)); }

ask_options options_of(ask_envelope& env) {
  ask_options o;
  o.request_id = std::move(env.request_id);
  o.thread_id = std::move(env.thread_id);
  o.traceparent = std::move(env.traceparent);
  o.observation = std::move(env.observation);
  o.retry = env.retry;
  if (env.deadline_ms > 0) o.deadline = std::chrono::milliseconds(env.deadline_ms);
  return o;
}

caf::behavior gateway(gateway_actor* self, runtime::impl* rt, std::string secret, std::shared_ptr<node_gate> gate) {
  self->set_default_handler(ignore_unexpected);
  const std::string own_node = caf::to_string(self->home_system().node());
  auto finished = [self] {
    auto& st = self->state;
    if (st.closing && nothing_running(st)) {
      st.closing->deliver(true);
      st.closing.reset();
    }
  };
  return {
      [self, secret, own_node](hello_atom, const std::string& caller_nonce) -> caf::result<std::string, std::string> {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        if (!sender) return refused("a hello needs a sender");
        if (!handshake::is_nonce(caller_nonce)) return refused("a hello needs a nonce");
        const auto now = std::chrono::steady_clock::now();
        drop_expired(st, now);
        const caf::node_id node = sender->node();
        std::size_t of_node = 0;
        for (const auto& [nonce, c] : st.open)
          if (c.node == node) ++of_node;
        if (of_node >= max_open_per_node || st.open.size() >= max_open) return refused("too many open handshakes");
        auto ours = handshake::nonce();
        st.open.emplace(ours, challenge{caf::actor_cast<caf::actor_addr>(sender), node, caller_nonce, now});
        const std::string caller_node = caf::to_string(node);
        return {ours, handshake::gateway_proof(secret, {caller_node, own_node, caller_nonce, ours})};
      },
      [self, secret, own_node](proof_atom, const std::string& gateway_nonce,
                               const std::string& proof) -> caf::result<bool> {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        auto it = st.open.find(gateway_nonce);
        if (!sender || it == st.open.end() || it->second.caller != caf::actor_cast<caf::actor_addr>(sender))
          return false;
        const challenge c = std::move(it->second);
        st.open.erase(it);
        const std::string caller_node = caf::to_string(c.node);
        const handshake::transcript t{caller_node, own_node, c.caller_nonce, gateway_nonce};
        if (!handshake::same(proof, handshake::caller_proof(secret, t))) return false;
        auto [slot, first] = st.sessions.insert_or_assign(
            c.caller, session{handshake::session_token(secret, t), caf::actor_cast<caf::actor>(sender)});
        if (first) {
          // The proxy of the caller ends when the connection does (or that
          // actor): then its session and tied requests go. Not a monitor: a
          // down_msg is something any peer can send.
          caf::actor_cast<caf::abstract_actor*>(sender)->attach_functor([gateway = self->address(), caller = c.caller] {
            if (auto g = caf::actor_cast<caf::actor>(gateway)) caf::anon_send(g, local::caller_gone{caller});
          });
        }
        return true;
      },
      [self, rt, gate](rask_atom, const std::string& token,
                       ask_envelope& env) -> std::tuple<std::string, std::string, std::int64_t> {
        auto& st = self->state;
        const session* s = session_of(st, self->current_sender(), token);
        if (!s)
          return {error_type::node_refused, "the asking node has not proven that it knows the cluster's secret", 0};
        if (st.closing) return {error_type::shutdown, "the node is closing", 0};
        auto caller = s->caller;
        auto caller_addr = caf::actor_cast<caf::actor_addr>(caller);
        auto [slot, first] = st.running.try_emplace(caller_addr);
        const std::uint64_t key = env.key;
        ask_options o = options_of(env);
        std::int64_t deadline = env.deadline_ms;
        if (deadline == 0)
          if (auto entry = rt->ctx->agents.find_entry(env.agent_id))
            deadline = std::chrono::duration_cast<std::chrono::milliseconds>(entry->deadline).count();
        o.on_event = [caller, gateway = caf::actor_cast<caf::actor>(self), caller_addr, key, stream = env.stream,
                      token = s->token, gate, decides = env.kind == ask_envelope::decide](const stream_event& e) {
          const auto* end = std::get_if<request_finished_event>(&e);
          if (!stream && !end) return;
          std::shared_lock lock(gate->mutex);
          if (!gate->open) return;
          caf::anon_send(caller, revent_atom::value, token, event_envelope{key, e});
          if (end)
            caf::anon_send(gateway,
                           local::request_ended{caller_addr, key, end->result.paused(),
                                                decides && !std::holds_alternative<error_info>(end->result.outcome)});
        };
        if (env.kind == ask_envelope::decide) {
          slot->second.insert_or_assign(
              key,
              running_request{rt->decide(env.agent_id, std::move(env.decided), std::move(o)), env.outlives_caller});
        } else {
          auto overrides = decode_query_overrides(env.overrides, "overrides");
          if (!overrides) {
            if (slot->second.empty()) st.running.erase(slot);
            return {error_type::invalid_query, overrides.error().describe(), 0};
          }
          o.overrides = std::move(*overrides);
          slot->second.insert_or_assign(
              key, running_request{rt->ask(env.agent_id, std::move(env.question), std::move(o)), env.outlives_caller});
        }
        return {std::string(), std::string(), deadline};
      },
      [self](rcancel_atom, const std::string& token, std::uint64_t key, std::string& reason) {
        auto& st = self->state;
        const session* s = session_of(st, self->current_sender(), token);
        if (!s) return;
        auto it = st.running.find(caf::actor_cast<caf::actor_addr>(s->caller));
        if (it == st.running.end()) return;
        if (auto r = it->second.find(key); r != it->second.end()) r->second.handle.cancel(std::move(reason));
      },
      [self, finished](local::request_ended& ended) {
        auto& st = self->state;
        if (auto it = st.running.find(ended.caller); it != st.running.end()) {
          auto& requests = it->second;
          if (auto r = requests.find(ended.key); r != requests.end()) {
            // A decision answered: the pauses of its request that this
            // caller asked have nothing left to cancel.
            if (ended.decided)
              std::erase_if(requests, [&](const auto& other) {
                return other.first != ended.key && other.second.paused &&
                       other.second.handle.id() == r->second.handle.id();
              });
            if (ended.paused)
              requests.at(ended.key).paused = true;
            else
              requests.erase(ended.key);
          }
          if (requests.empty()) st.running.erase(it);
        }
        finished();
      },
      [self](local::caller_gone& gone) {
        auto& st = self->state;
        st.sessions.erase(gone.caller);
        auto it = st.running.find(gone.caller);
        if (it == st.running.end()) return;
        for (auto& [key, r] : it->second)
          if (!r.outlives_caller) r.handle.cancel("the asking node is gone");
      },
      [self](local::gateway_close) -> caf::result<bool> {
        auto& st = self->state;
        // For the callers the node is lost (they may ask elsewhere): they hear
        // so first, then the requests are cancelled here (their ends come too
        // late to count).
        const std::string why = "the node that ran the request closed";
        for (auto& [caller, requests] : st.running) {
          auto s = st.sessions.find(caller);
          for (auto& [key, r] : requests) {
            if (s != st.sessions.end())
              self->send(s->second.caller, revent_atom::value, s->second.token,
                         event_envelope{key, request_finished_event{reply{
                                                 r.handle.id(), error_info::of(error_type::node_lost, why), {}, 0}}});
            r.handle.cancel(why);
          }
        }
        if (nothing_running(st)) return true;
        st.closing = self->make_response_promise();
        return *st.closing;
      },
      [self](local::gateway_stop) { self->quit(); },
      [self](local::count_requests) {
        std::size_t n = 0;
        for (const auto& [caller, requests] : self->state.running) n += requests.size();
        return n;
      },
  };
}

}  // namespace

caf::actor spawn_gateway(caf::actor_system& sys, runtime::impl& rt, std::string secret,
                         std::shared_ptr<node_gate> gate) {
  return sys.spawn(gateway, &rt, std::move(secret), std::move(gate));
}

}  // namespace troupe
