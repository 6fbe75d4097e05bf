#include "actors/detail/supervisor.hpp"

#include "actors/detail/agent_actor.hpp"
#include "actors/detail/agent_launch.hpp"
#include "actors/detail/reserve_growing.hpp"

#include <atomic>
#include <chrono>
#include <unordered_map>
#include <vector>

namespace troupe {

namespace {

using steady = std::chrono::steady_clock;

// What most agents never have: a restart, or a stop asked for.
struct child_history {
  // Restarts within the window. A vector: an empty std::deque allocates
  // about 600 bytes.
  std::vector<steady::time_point> restarts;
  bool stopping = false;
  std::vector<caf::response_promise> stop_waiters;  // answered once it is down
};

struct child {
  std::shared_ptr<const agent_profile> profile;
  std::shared_ptr<const react_config> config;
  std::shared_ptr<const std::string> system_prompt;
  agent_actor actor;
  // On the heap: held in place, it made every agent's entry in the
  // supervisor's table a jemalloc class larger (160 bytes instead of 112).
  std::unique_ptr<child_history> history;

  child_history& made_history() {
    if (!history) history = std::make_unique<child_history>();
    return *history;
  }
  bool stopping() const { return history && history->stopping; }
};

// With its key and the hash node's own 48 bytes, up to 64 bytes keep an
// agent's entry in jemalloc's 112-byte class.
#ifndef _GLIBCXX_DEBUG  // its containers are larger
static_assert(sizeof(void*) != 8 || sizeof(child) <= 64,
              "child grew past 64 bytes: every agent's entry in the supervisor moves to a larger size class");
#endif

struct supervisor_state {
  static inline const char* name = "troupe.supervisor";
  std::shared_ptr<runtime_context> ctx;
  std::unordered_map<std::string, child> agents;
  // The id each running agent has: the key of its entry in `agents` (node
  // based, so the key stays where it is while the entry lives).
  std::unordered_map<caf::actor_addr, const std::string*> agent_of;
  std::vector<caf::response_promise> shutdown_waiters;
  bool shutting_down = false;
  std::shared_ptr<std::atomic<std::size_t>> agents_left;  // while shutting down
};

using supervisor_self = supervisor_actor::stateful_pointer<supervisor_state>;

void start_agent(supervisor_self self, const std::string& id, child& c) {
  c.actor = spawn_agent_actor(self->system(), agent_launch{id, c.profile, c.config, c.system_prompt}, self->state.ctx);
  self->monitor(c.actor);
  self->state.agent_of[c.actor.address()] = &id;
  self->state.ctx->agents.put(id, c.actor, c.profile->request_deadline);
}

void maybe_finish_shutdown(supervisor_self self) {
  auto& st = self->state;
  if (!st.shutting_down || !st.agents.empty()) return;
  for (auto& p : st.shutdown_waiters) p.deliver(true);
  st.shutdown_waiters.clear();
}

void on_agent_down(supervisor_self self, const std::string& id, const caf::error& reason) {
  auto& st = self->state;
  auto it = st.agents.find(id);
  if (it == st.agents.end()) return;
  child& c = it->second;
  const bool crashed = reason && reason != caf::exit_reason::normal;
  const std::string why = crashed ? self->system().render(reason) : "stopped";
  if (crashed)
    st.ctx->emit(telemetry_kind::agent_crashed,
                 [&] { return telemetry_event{telemetry_kind::agent_crashed, id, {}, {}, {}, {}, 0, 0, why}; });

  const restart_policy policy = c.profile->restart;
  const bool restart = !c.stopping() && !st.shutting_down &&
                       (policy == restart_policy::permanent || (policy == restart_policy::transient && crashed));
  if (!restart) {
    st.ctx->agents.erase(id);
    if (c.history)
      for (auto& p : c.history->stop_waiters) p.deliver(true);
    st.agents.erase(it);
    maybe_finish_shutdown(self);
    return;
  }
  const auto now = steady::now();
  auto& restarts = c.made_history().restarts;
  std::erase_if(restarts, [&](steady::time_point t) { return now - t > st.ctx->restart_window; });
  if (static_cast<int>(restarts.size()) >= st.ctx->max_restarts) {
    const std::string report = "agent " + id + " stopped " + std::to_string(restarts.size() + 1) + " times within " +
                               std::to_string(st.ctx->restart_window.count()) + " ms (last: " + why +
                               "); it is not restarted again";
    st.ctx->agents.mark_failed(id, report);
    st.ctx->emit(telemetry_kind::agent_escalated,
                 [&] { return telemetry_event{telemetry_kind::agent_escalated, id, {}, {}, {}, {}, 0, 0, report}; });
    st.agents.erase(it);
    return;
  }
  restarts.push_back(now);
  start_agent(self, it->first, c);
  st.ctx->emit(telemetry_kind::agent_restarted,
               [&] { return telemetry_event{telemetry_kind::agent_restarted, id, {}, {}, {}, {}, 0, 0, why}; });
}

// Stops an agent for good (`tell` sends it what stops it), answered once
// it is down.
template <class Tell>
caf::result<bool> stop_child(supervisor_self self, const std::string& id, Tell tell) {
  auto it = self->state.agents.find(id);
  if (it == self->state.agents.end()) return false;
  child_history& h = it->second.made_history();
  h.stopping = true;
  tell(it->second.actor);
  h.stop_waiters.push_back(self->make_response_promise());
  return caf::delegated<bool>();
}

supervisor_actor::behavior_type supervisor(supervisor_self self, std::shared_ptr<runtime_context> ctx) {
  self->state.ctx = std::move(ctx);
  self->set_down_handler([self](caf::down_msg& m) {
    auto& st = self->state;
    if (auto a = st.agent_of.find(m.source); a != st.agent_of.end()) {
      const std::string id = *a->second;
      st.agent_of.erase(a);
      on_agent_down(self, id, m.reason);
    }
  });
  return {
      [self](spawn_atom, std::shared_ptr<const std::vector<agent_launch>> batch) -> caf::result<std::size_t> {
        auto& st = self->state;
        if (st.shutting_down) return caf::make_error(caf::sec::runtime_error, "the runtime is shutting down");
        // All or none: checked before any starts.
        for (const agent_launch& l : *batch)
          if (st.agents.count(l.id))
            return caf::make_error(caf::sec::runtime_error, "an agent named " + l.id + " is running");
        const std::size_t total = st.agents.size() + batch->size();
        reserve_growing(st.agents, total);
        reserve_growing(st.agent_of, total);
        st.ctx->agents.reserve(total);
        for (const agent_launch& l : *batch) {
          auto [it, _] = st.agents.try_emplace(l.id);
          it->second.profile = l.profile;
          it->second.config = l.config;
          it->second.system_prompt = l.system_prompt;
          start_agent(self, it->first, it->second);
        }
        return batch->size();
      },
      [self](stop_atom, const std::string& id) -> caf::result<bool> {
        return stop_child(self, id, [&](const agent_actor& a) { self->send(a, stop_atom::value); });
      },
      [self](drain_atom, const std::string& id, caf::timespan patience) -> caf::result<bool> {
        return stop_child(self, id, [&](const agent_actor& a) {
          self->send(a, drain_atom::value);
          self->delayed_send(a, patience, stop_atom::value);  // dropped if it stopped by then
        });
      },
      [self](shutdown_atom) -> std::vector<agent_actor> {
        auto& st = self->state;
        std::vector<agent_actor> out;
        if (st.shutting_down) return out;
        st.shutting_down = true;
        // Agents stopping for good are not restarted, so the supervisor
        // need not hear of each: a down message apiece, each an erase from
        // three tables, made the supervisor the bottleneck of a large
        // shutdown. They count themselves down instead, and the last one
        // tells it (a functor attached to an actor that is gone already
        // runs at once).
        st.agents_left = std::make_shared<std::atomic<std::size_t>>(st.agents.size() + 1);
        auto me = caf::actor_cast<supervisor_actor>(self);
        auto count_down = [left = st.agents_left, me] {
          if (left->fetch_sub(1) == 1) caf::anon_send(me, all_down_atom::value);
        };
        out.reserve(st.agents.size());
        for (auto& [id, c] : st.agents) {
          self->demonitor(c.actor.address());
          c.actor->attach_functor(count_down);
          out.push_back(c.actor);
        }
        st.agent_of.clear();
        count_down();  // the one for the supervisor itself: none may reach zero before all are attached
        return out;
      },
      [self](all_down_atom) {
        auto& st = self->state;
        for (auto& [id, c] : st.agents)
          if (c.history)
            for (auto& p : c.history->stop_waiters) p.deliver(true);
        st.ctx->agents.clear();
        st.agents.clear();
        maybe_finish_shutdown(self);
      },
      [self](done_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.agents.empty()) return true;
        st.shutdown_waiters.push_back(self->make_response_promise());
        return caf::delegated<bool>();
      },
  };
}

}  // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(supervisor, std::move(ctx));
}

}  // namespace troupe
