#include "actors/detail/broker.hpp"

#include "actors/detail/request_state.hpp"

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe {

namespace {

reply failed(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

using steady = std::chrono::steady_clock;

struct pending_request {
  std::shared_ptr<request::state> state;
  agent_actor agent;
  steady::time_point due;
};

struct broker_state {
  static inline const char* name = "troupe.broker";
  std::shared_ptr<runtime_context> ctx;
  std::unordered_map<std::string, pending_request> pending;
  // The decides that subscribed, by the request they decide on, oldest
  // first: a request's stream events reach the oldest, since the agent
  // answers a request's decides in the order they come, and the one that
  // continues the request is answered only once it pauses again or ends.
  std::unordered_map<std::string, std::vector<std::string>> decide_streams;
  // Deadlines, earliest first, and when the one timer the broker keeps is
  // due. A CAF request timeout per ask would wake CAF's clock thread twice
  // a turn (to arm and to cancel it); this arms one timer per earliest
  // deadline instead.
  std::set<std::pair<steady::time_point, std::string>> deadlines;
  std::optional<steady::time_point> timer_due;
  std::uint64_t decides_again = 0;  // numbers the keys of decisions sent while one is awaited

  // A broker that dies (it should not: callbacks are guarded) still ends
  // every request it held; its pool starts another.
  ~broker_state() {
    for (auto& [id, p] : pending)
      p.state->settle(failed(id, error_type::broker_crashed, "the runtime's broker for this request stopped"));
  }
};

using broker_self = broker_actor::stateful_pointer<broker_state>;

class broker_logic {
 public:
  explicit broker_logic(broker_self self) : self_(self), st_(self->state) {}

  // A decision is followed like an ask, under a key of its own: decisions
  // for several calls of one request may be awaited at once, beside the
  // request's own ask.
  void decide(std::string thread_id, decision d, agent_actor agent, std::shared_ptr<request::state> s) {
    // A decision sent again while the first is awaited (a repeat with the
    // same idempotency key, or a second opinion the agent refuses) is
    // followed too, under a key numbered apart.
    std::string key = "decision\x1f" + d.request_id + "\x1f" + d.tool_call_id;
    if (st_.pending.contains(key)) key += "\x1f" + std::to_string(++st_.decides_again);
    const event_sink_actor events = s->on_event ? caf::actor_cast<event_sink_actor>(self_) : event_sink_actor{};
    if (events) st_.decide_streams[d.request_id].push_back(key);
    follow(key, std::move(s), agent);
    request_reply(key, agent, decide_atom::value, std::move(thread_id), std::move(d), events);
  }

  void ask(query q, agent_actor agent, std::shared_ptr<request::state> s) {
    const std::string id = q.request_id;
    // Requests are keyed by id until they end: a second one under the same
    // id would take the first one's place, and the first one's answer and
    // deadline would then find the wrong request (or none).
    if (st_.pending.contains(id)) {
      if (auto thrown = s->settle(failed(
              id, error_type::duplicate_request,
              "request " + id + " is still running on agent " + s->agent_id + "; a request id names one request")))
        report_callback_failure(*s, *thrown);
      return;
    }
    const event_sink_actor events = s->on_event ? caf::actor_cast<event_sink_actor>(self_) : event_sink_actor{};
    follow(id, std::move(s), agent);
    request_reply(id, agent, ask_atom::value, std::move(q), events);
  }

  // The timer fired: requests past their deadline end with
  // deadline_exceeded and are cancelled at their agent.
  void expire() {
    st_.timer_due.reset();
    const auto now = steady::now();
    while (!st_.deadlines.empty() && st_.deadlines.begin()->first <= now) {
      const std::string id = st_.deadlines.begin()->second;
      auto it = st_.pending.find(id);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(it->second.state->deadline).count();
      const std::string request_id = it->second.state->id;  // a decision's key names its request
      self_->send(it->second.agent, cancel_atom::value, request_id, "the request's deadline passed");
      end(id, failed(request_id, error_type::deadline_exceeded,
                     "agent " + it->second.state->agent_id + " did not answer within " + std::to_string(ms) + " ms"));
    }
    arm_timer();
  }

  void cancel(const std::shared_ptr<request::state>& s, const std::string& reason) {
    auto it = st_.pending.find(s->id);
    if (it != st_.pending.end() && it->second.state == s) {
      self_->send(it->second.agent, cancel_atom::value, s->id, reason);
      return;
    }
    // A decide's handle, followed under a key of its own (rare: a scan).
    for (const auto& [key, p] : st_.pending)
      if (p.state == s) {
        self_->send(p.agent, cancel_atom::value, s->id, reason);
        return;
      }
    // A paused request's ask has ended: the cancel goes to the thread, and
    // the handle follows the request to its end.
    const auto so_far = s->wait(std::chrono::milliseconds(0));
    if (!so_far || !so_far->paused()) return;
    const std::string key = "cancel\x1f" + s->id;
    if (st_.pending.contains(key)) return;
    auto agent = st_.ctx->agents.find(s->agent_id);
    if (!agent) return;
    follow(key, s, *agent);
    request_reply(key, *agent, cancel_atom::value, s->thread_id, s->id, reason);
  }

  void event(const stream_event& e) {
    const std::string& id = std::visit(
        [](const auto& x) -> const std::string& {
          if constexpr (requires { x.request_id; })
            return x.request_id;
          else
            return x.result.request_id;
        },
        e);
    const std::string& key = subscriber_of(id);
    auto it = st_.pending.find(key);
    if (it == st_.pending.end()) return;
    if (auto thrown = it->second.state->notify(e)) {
      report_callback_failure(*it->second.state, *thrown);
      // The caller cannot follow the request any more: stop it.
      self_->send(it->second.agent, cancel_atom::value, id, "the caller's on_event callback threw");
      // A copy: a decide's key lives in decide_streams, which end() updates.
      end(std::string(key), failed(id, error_type::callback_failed, "on_event threw: " + *thrown));
    }
  }

  void shutdown() {
    for (auto& [id, p] : st_.pending)
      p.state->settle(failed(id, error_type::shutdown, "the runtime shut down before the request finished"));
    st_.pending.clear();
    st_.deadlines.clear();
    st_.decide_streams.clear();
  }

 private:
  // Who follows a request's stream events: its ask, or else the oldest
  // decide on it that subscribed (its key; the request id if none).
  const std::string& subscriber_of(const std::string& request_id) const {
    if (st_.decide_streams.empty() || st_.pending.contains(request_id)) return request_id;
    auto it = st_.decide_streams.find(request_id);
    return it == st_.decide_streams.end() ? request_id : it->second.front();
  }

  void forget_decide_stream(const std::string& request_id, const std::string& key) {
    auto it = st_.decide_streams.find(request_id);
    if (it == st_.decide_streams.end()) return;
    std::erase(it->second, key);
    if (it->second.empty()) st_.decide_streams.erase(it);
  }

  // Keeps the request until it ends or its deadline passes.
  void follow(const std::string& key, std::shared_ptr<request::state> s, const agent_actor& agent) {
    const auto due = steady::now() + s->deadline;
    st_.pending[key] = pending_request{std::move(s), agent, due};
    st_.deadlines.emplace(due, key);
    arm_timer();
  }

  // Sends the agent a message it answers with a reply, which ends what is
  // followed under `key` (or its failure to answer does).
  template <class... Ts>
  void request_reply(const std::string& key, const agent_actor& agent, Ts&&... xs) {
    self_->request(agent, caf::infinite, std::forward<Ts>(xs)...)
        .then([self = self_, key](reply& r) { broker_logic(self).end(key, std::move(r)); },
              [self = self_, key](caf::error& e) { broker_logic(self).no_answer(key, e); });
  }

  void arm_timer() {
    if (st_.deadlines.empty()) return;
    const auto earliest = st_.deadlines.begin()->first;
    if (st_.timer_due && *st_.timer_due <= earliest) return;  // fires in time; it re-arms then
    st_.timer_due = earliest;
    self_->delayed_send(self_, std::max(earliest - steady::now(), steady::duration::zero()), timeout_atom::value);
  }

  void end(const std::string& id, reply r) {
    auto it = st_.pending.find(id);
    if (it == st_.pending.end()) return;  // ended already (a callback failed)
    pending_request p = std::move(it->second);
    st_.pending.erase(it);
    st_.deadlines.erase({p.due, id});
    if (!st_.decide_streams.empty()) forget_decide_stream(p.state->id, id);
    if (auto thrown = p.state->settle(std::move(r))) report_callback_failure(*p.state, *thrown);
  }

  void report_callback_failure(const request::state& s, const std::string& what) {
    st_.ctx->emit(telemetry_kind::callback_failed, [&] {
      return telemetry_event{telemetry_kind::callback_failed, s.agent_id, {}, s.id, {}, {}, 0, 0, what};
    });
  }

  void no_answer(const std::string& id, const caf::error& e) {
    auto it = st_.pending.find(id);
    if (it == st_.pending.end()) return;
    const std::string& agent_id = it->second.state->agent_id;
    const std::string request_id = it->second.state->id;
    if (e == caf::sec::request_receiver_down) {
      // The agent was gone before it took the ask.
      end(id, st_.ctx->shutting_down
                  ? failed(request_id, error_type::shutdown, "the runtime is shutting down")
                  : failed(request_id, error_type::agent_stopped, "agent " + agent_id + " stopped before answering"));
    } else {
      end(id, failed(request_id, error_type::agent_crashed,
                     "agent " + agent_id + " failed to answer: " + self_->system().render(e)));
    }
  }

  broker_self self_;
  broker_state& st_;
};

broker_actor::behavior_type broker(broker_self self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [self](ask_atom, query& q, agent_actor& agent, std::shared_ptr<request::state>& s) {
        broker_logic(self).ask(std::move(q), std::move(agent), std::move(s));
      },
      [self](decide_atom, std::string& thread_id, decision& d, agent_actor& agent, std::shared_ptr<request::state>& s) {
        broker_logic(self).decide(std::move(thread_id), std::move(d), std::move(agent), std::move(s));
      },
      // Cancels travel the asks' path, so a cancel never overtakes its ask.
      [self](cancel_atom, std::shared_ptr<request::state>& s, const std::string& reason) {
        broker_logic(self).cancel(s, reason);
      },
      [self](event_atom, const stream_event& e) { broker_logic(self).event(e); },
      [self](timeout_atom) { broker_logic(self).expire(); },
      [self](stats_atom) -> std::size_t { return self->state.pending.size(); },
      [self](shutdown_atom) -> bool {
        broker_logic(self).shutdown();
        self->quit();
        return true;
      },
  };
}

}  // namespace

broker_actor spawn_broker(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(broker, std::move(ctx));
}

}  // namespace troupe
