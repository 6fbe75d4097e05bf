// The gateway: what another node's asks meet. It takes asks only from nodes
// that proved they know the secret, runs them as local asks of this
// runtime, and sends every stream event back to the asking node's link.

#include "actors/cluster/detail/handshake.hpp"
#include "actors/cluster/detail/node_impl.hpp"
#include "actors/cluster/detail/wire.hpp"
#include "actors/detail/protocols.hpp"

#include <set>
#include <unordered_map>

namespace troupe {

namespace {

using namespace wire;

struct running_request {
  request handle;
  bool outlives_caller = false;
};

struct gateway_state {
  std::map<caf::node_id, std::pair<std::string, std::string>> challenges;  // caller's nonce, ours
  std::set<caf::node_id> trusted;
  // By the link that asked (so that a node's end cancels its requests), then by key.
  std::map<caf::actor_addr, std::unordered_map<std::uint64_t, running_request>> running;
  std::optional<caf::response_promise> closing;
  static inline const char* name = "troupe_gateway";
};

using gateway_actor = caf::stateful_actor<gateway_state>;

bool nothing_running(const gateway_state& st) {
  for (const auto& [caller, requests] : st.running)
    if (!requests.empty()) return false;
  return true;
}

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
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    auto it = st.running.find(down.source);
    if (it == st.running.end()) return;
    for (auto& [key, r] : it->second)
      if (!r.outlives_caller) r.handle.cancel("the asking node is gone");
    st.trusted.erase(down.source.node());
  });
  auto finished = [self] {
    auto& st = self->state;
    if (st.closing && nothing_running(st)) {
      st.closing->deliver(true);
      st.closing.reset();
    }
  };
  return {
      [self, secret](hello_atom, const std::string& caller_nonce) -> std::tuple<std::string, std::string> {
        auto ours = handshake::nonce();
        self->state.challenges[self->current_sender()->node()] = {caller_nonce, ours};
        return {ours, handshake::gateway_proof(secret, caller_nonce, ours)};
      },
      [self, secret](proof_atom, const std::string& proof) -> bool {
        auto& st = self->state;
        const auto node = self->current_sender()->node();
        auto it = st.challenges.find(node);
        if (it == st.challenges.end()) return false;
        const auto [caller_nonce, ours] = it->second;
        st.challenges.erase(it);
        if (!handshake::same(proof, handshake::caller_proof(secret, caller_nonce, ours))) return false;
        st.trusted.insert(node);
        return true;
      },
      [self, rt, gate](rask_atom, ask_envelope& env) -> std::tuple<std::string, std::string, std::int64_t> {
        auto& st = self->state;
        auto sender = self->current_sender();
        if (!sender || !st.trusted.count(sender->node()))
          return {error_type::node_refused, "the asking node has not proven that it knows the cluster's secret", 0};
        if (st.closing) return {error_type::shutdown, "the node is closing", 0};
        auto caller = caf::actor_cast<caf::actor>(sender);
        auto caller_addr = caf::actor_cast<caf::actor_addr>(sender);
        auto [slot, first] = st.running.try_emplace(caller_addr);
        if (first) self->monitor(caller);
        const std::uint64_t key = env.key;
        ask_options o = options_of(env);
        std::int64_t deadline = env.deadline_ms;
        if (deadline == 0)
          if (auto entry = rt->ctx->agents.find_entry(env.agent_id))
            deadline = std::chrono::duration_cast<std::chrono::milliseconds>(entry->deadline).count();
        o.on_event = [caller, gateway = caf::actor_cast<caf::actor>(self), caller_addr, key, stream = env.stream,
                      gate](const stream_event& e) {
          const auto* end = std::get_if<request_finished_event>(&e);
          if (!stream && !end) return;
          std::shared_lock lock(gate->mutex);
          if (!gate->open) return;
          caf::anon_send(caller, revent_atom::value, event_envelope{key, e});
          if (end && !end->result.paused()) caf::anon_send(gateway, done_atom::value, caller_addr, key);
        };
        if (env.kind == ask_envelope::decide) {
          slot->second.insert_or_assign(
              key,
              running_request{rt->decide(env.agent_id, std::move(env.decided), std::move(o)), env.outlives_caller});
        } else {
          auto overrides = decode_query_overrides(env.overrides, "overrides");
          if (!overrides) return {error_type::invalid_query, overrides.error().describe(), 0};
          o.overrides = std::move(*overrides);
          slot->second.insert_or_assign(
              key, running_request{rt->ask(env.agent_id, std::move(env.question), std::move(o)), env.outlives_caller});
        }
        return {std::string(), std::string(), deadline};
      },
      [self](rcancel_atom, std::uint64_t key, std::string& reason) {
        auto& st = self->state;
        auto it = st.running.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
        if (it == st.running.end()) return;
        if (auto r = it->second.find(key); r != it->second.end()) r->second.handle.cancel(std::move(reason));
      },
      [self, finished](done_atom, const caf::actor_addr& caller, std::uint64_t key) {
        auto& st = self->state;
        if (auto it = st.running.find(caller); it != st.running.end()) {
          it->second.erase(key);
          if (it->second.empty()) {
            self->demonitor(caller);
            st.running.erase(it);
          }
        }
        finished();
      },
      [self, finished](shutdown_atom) -> caf::result<bool> {
        auto& st = self->state;
        // For the callers the node is lost (they may ask elsewhere): they hear
        // so first, then the requests are cancelled here (their ends come too
        // late to count).
        const std::string why = "the node that ran the request closed";
        for (auto& [caller, requests] : st.running) {
          auto to = caf::actor_cast<caf::actor>(caller);
          for (auto& [key, r] : requests) {
            if (to)
              self->send(to, revent_atom::value,
                         event_envelope{key, request_finished_event{reply{
                                                 r.handle.id(), error_info::of(error_type::node_lost, why), {}, 0}}});
            r.handle.cancel(why);
          }
        }
        if (nothing_running(st)) return true;
        st.closing = self->make_response_promise();
        return *st.closing;
      },
  };
}

}  // namespace

caf::actor spawn_gateway(caf::actor_system& sys, runtime::impl& rt, std::string secret,
                         std::shared_ptr<node_gate> gate) {
  return sys.spawn(gateway, &rt, std::move(secret), std::move(gate));
}

}  // namespace troupe
