// The agent actor's messages, each handed to its logic (agent_logic, in
// the agent_*.cpp units beside this one), and the agent's spawn.

#include "actors/detail/agent_actor.hpp"

#include "actors/detail/agent_state.hpp"
#include "actors/detail/dispatched_behavior.hpp"
#include "json/utf8.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace troupe {

namespace {

using detail::agent_logic;
using detail::agent_self;
using detail::handle_as;
using detail::seeded_source;
using detail::thread_slot;

// Where a seeded agent's logical clock starts: 2026-01-01T00:00:00Z.
constexpr std::int64_t seeded_epoch_ms = 1'767'225'600'000;

// The agent's handlers, one per message of agent_actor's interface.

caf::result<reply> handle_ask(agent_self self, query& q, event_sink_actor& events) {
  agent_logic l(self);
  auto answer = l.on_ask(std::move(q), std::move(events));
  l.unload_idle_threads();
  return answer;
}

void handle_signal(agent_self self, std::string& thread_id, signal& s) {
  agent_logic l(self);
  l.on_signal(thread_id, std::move(s));
  l.unload_idle_threads();
}

caf::result<reply> handle_decide(agent_self self, std::string& thread_id, decision& d, event_sink_actor& events) {
  agent_logic l(self);
  auto answer = l.on_decide(std::move(thread_id), std::move(d), std::move(events));
  l.unload_idle_threads();
  return answer;
}

void handle_cancel(agent_self self, std::string& request_id, std::string& reason) {
  repair_utf8(reason);  // the caller's words, committed with the cancel
  agent_logic(self).on_cancel(request_id, reason);
}

caf::result<reply> handle_cancel_ended(agent_self self, std::string& thread_id, std::string& request_id,
                                       std::string& reason) {
  repair_utf8(reason);
  agent_logic l(self);
  auto answer = l.on_cancel_ended(std::move(thread_id), request_id, reason);
  l.unload_idle_threads();
  return answer;
}

void handle_loaded(agent_self self, std::string& thread_id, loaded_thread& loaded, lease_held& lease) {
  agent_logic l(self);
  l.on_loaded(thread_id, loaded, lease);
  l.after_store_answer();
}

void handle_committed(agent_self self, std::string& thread_id, std::uint64_t& no, commit_outcome& outcome) {
  agent_logic l(self);
  l.on_committed(thread_id, no, outcome);
  l.after_store_answer();
}

void handle_viewed(agent_self self, std::uint64_t& no, std::string& thread_id, stored_thread& held) {
  agent_logic(self).on_viewed(no, thread_id, held);
}

caf::result<thread_view> handle_snapshot(agent_self self, std::string& thread_id) {
  return agent_logic(self).snapshot(thread_id);
}

agent_stats handle_stats(agent_self self) { return agent_logic(self).stats(); }

void handle_stop(agent_self self) {
  agent_logic l(self);
  if (l.stop())
    l.quit();
  else
    self->state.quit_when_settled = true;
}

// From now on asks and decisions are refused; the agent stops once it runs
// none: now, or when its last request ends (which sends it drain again).
void handle_drain(agent_self self) {
  self->state.draining = true;
  if (agent_logic(self).drained()) handle_stop(self);
}

// Every message an agent is sent comes here, as CAF's default handler: the
// agent's behaviour is one object shared by every agent, and handles
// nothing (detail/dispatched_behavior.hpp says why).
caf::result<caf::message> agent_dispatch(caf::scheduled_actor* actor, caf::message_view& view) {
  // A typed behaviour would not compile without a handler for each message
  // of the interface; the switch below has no such check.
  static_assert(caf::detail::tl_size<agent_actor::signatures>::value == 12,
                "agent_actor's interface changed: give agent_dispatch a case for each of its messages");
  auto self = static_cast<agent_self>(actor);
  const caf::type_erased_tuple& xs = view.content();
  if (!xs.empty() && xs.match_element<caf::atom_value>(0)) {
    switch (static_cast<std::uint64_t>(xs.get_as<caf::atom_value>(0))) {
      case ask_atom::uint_value():
        return handle_as<agent_actor, ask_atom>(handle_ask, self, view);
      case signal_atom::uint_value():
        return handle_as<agent_actor, signal_atom>(handle_signal, self, view);
      case cancel_atom::uint_value():
        if (xs.size() == 4) return handle_as<agent_actor, cancel_atom>(handle_cancel_ended, self, view);
        return handle_as<agent_actor, cancel_atom>(handle_cancel, self, view);
      case decide_atom::uint_value():
        return handle_as<agent_actor, decide_atom>(handle_decide, self, view);
      case loaded_atom::uint_value():
        return handle_as<agent_actor, loaded_atom>(handle_loaded, self, view);
      case committed_atom::uint_value():
        return handle_as<agent_actor, committed_atom>(handle_committed, self, view);
      case viewed_atom::uint_value():
        return handle_as<agent_actor, viewed_atom>(handle_viewed, self, view);
      case snapshot_atom::uint_value():
        return handle_as<agent_actor, snapshot_atom>(handle_snapshot, self, view);
      case stats_atom::uint_value():
        return handle_as<agent_actor, stats_atom>(handle_stats, self, view);
      case stop_atom::uint_value():
        return handle_as<agent_actor, stop_atom>(handle_stop, self, view);
      case drain_atom::uint_value():
        return handle_as<agent_actor, drain_atom>(handle_drain, self, view);
    }
  }
  // Not of the interface: dropped with an error to the sender, as CAF does by default.
  return caf::print_and_drop(actor, view);
}

agent_actor::behavior_type agent_behavior(agent_self self, agent_launch launch, std::shared_ptr<runtime_context> ctx) {
  auto& st = self->state;
  st.id = std::move(launch.id);
  st.profile = std::move(launch.profile);
  st.ctx = std::move(ctx);
  st.config = std::move(launch.config);
  st.system_prompt = std::move(launch.system_prompt);
  st.executor_key = std::hash<std::string>{}(st.id);
  if (st.ctx->seed)
    st.seeded =
        std::make_unique<seeded_source>(seeded_source{random_ids(*st.ctx->seed ^ st.executor_key), seeded_epoch_ms});
  st.threads = thread_table<thread_slot>({st.profile->max_loaded_threads, st.profile->thread_idle_timeout});
  agent_logic(self).expire_stored_pauses();
  return detail::dispatched_behavior<agent_actor>(self, agent_dispatch);
}

}  // namespace

std::shared_ptr<const react_config> make_react_config(const agent_spec& spec, tool_set tools) {
  auto c = std::make_shared<react_config>();
  c->model = spec.model;
  c->tools = std::move(tools);
  c->max_iterations = spec.max_iterations;
  c->params = spec.params;
  c->tool_timeout_ms = spec.tool_timeout.count();
  c->context = spec.context;
  c->summary_model = spec.summary_model;
  if (!spec.approvals.empty())
    c->approvals = std::make_shared<const std::map<std::string, approval_rule, std::less<>>>(spec.approvals);
  return c;
}

agent_actor spawn_agent_actor(caf::actor_system& sys, const agent_launch& launch,
                              std::shared_ptr<runtime_context> ctx) {
  return sys.spawn(agent_behavior, launch, std::move(ctx));
}

}  // namespace troupe
