// The agent's commit pipeline: each step of the machine is committed to the
// store, then to the thread, before any of its directives leaves; signals
// for a thread wait while its step commits. A store that cannot be written
// fails the running request with a typed error.

#include "actors/detail/agent_state.hpp"

#include <algorithm>

namespace troupe::detail {

// One step of the machine, committed (to the store, then the thread) before
// any of its directives leaves. With a store that does I/O the commit runs
// on a store thread and the step is taken when it answers (on_committed);
// the thread's signals wait meanwhile, and the agent's other threads go on.
// A store that cannot be written fails the running request with a typed
// error; the thread in memory stays what the store holds.
void agent_logic::run(thread_slot& slot, const signal& s) {
  if (slot.phase != slot_phase::ready) {
    slot.held.push_back({s, false});
    return;
  }
  if (const auto* delta = std::get_if<llm_delta>(&s)) return slot.conversation.absorb(*delta);
  react_thread::prepared_step step =
      slot.conversation.prepare(*st_.config, s, now_ms(), ids(),
                                st_.system_prompt ? std::string_view(*st_.system_prompt) : std::string_view(), st_.id);
  if (!step.writes()) {
    take(slot, std::move(step));
    return;
  }
  if (stores().immediate()) {
    auto written = stores().append_now(*step.next, step.rev_before);
    if (written)
      take(slot, std::move(step));
    else
      fail_on_store(slot, written.error());
    return;
  }
  const std::uint64_t rev_before = step.rev_before;
  thread_view next = *step.next;
  slot.pending = std::make_unique<react_thread::prepared_step>(std::move(step));
  slot.phase = slot_phase::committing;
  const std::uint64_t no = ++slot.commit_no;
  // A commit renews the lease it is made under, at most once a second (or
  // per half lease, if shorter): the lease stays that little less than
  // lease_ttl ahead of every commit, and the commits in between leave the
  // store's lease row as it is instead of writing it each time.
  if (slot.lease) {
    const std::int64_t now = wall_clock_ms(), ttl = st_.ctx->lease_ttl.count();
    if (slot.lease->expires_at_ms - now <= ttl - std::min<std::int64_t>(1'000, ttl / 2))
      slot.lease->expires_at_ms = now + ttl;
  }
  stores().append(std::move(next), rev_before, slot.lease ? std::optional<thread_lease>(*slot.lease) : std::nullopt,
                  [self = handle(), thread_id = slot.conversation.history().id(), no](commit_outcome outcome) {
                    caf::anon_send(self, committed_atom::value, thread_id, no, std::move(outcome));
                  });
}

// A step whose entries are stored: its directives leave, in the machine's
// order (a decision's answer before the calls it lets run, so the decide
// that continues the request is its asker when they start).
void agent_logic::take(thread_slot& slot, react_thread::prepared_step&& step) {
  const std::uint64_t from = slot.conversation.history().size();
  const bool was_paused = slot.conversation.state().status == react_status::awaiting_input;
  std::vector<directive> next = slot.conversation.adopt(std::move(step));
  report_approval_waits(slot, from);
  // A pause that ends without a decide to follow the request (its
  // deadline's default, a decide nobody awaits) still runs it as a
  // request, reported started and ended as any, with nobody to answer.
  const react_state& now = slot.conversation.state();
  if (was_paused && now.busy() && now.status != react_status::awaiting_input && !slot.running &&
      slot.asks.running().empty() && std::none_of(next.begin(), next.end(), [](const directive& d) {
        const auto* answer = std::get_if<decision_answer>(&d);
        return answer && answer->taken;
      }))
    run_again(slot, now.request_id.str(), asker{{}, {}, steady_us()});
  for (directive& d : next) dispatch(slot, std::move(d));
}

// The store's answer to the commit of a thread's pending step.
void agent_logic::on_committed(const std::string& thread_id, std::uint64_t commit_no, commit_outcome& outcome) {
  thread_slot* slot = st_.threads.find(thread_id);
  if (!slot || slot->phase != slot_phase::committing || slot->commit_no != commit_no) return;
  react_thread::prepared_step step = std::move(*slot->pending);
  slot->pending.reset();
  slot->phase = slot_phase::ready;
  if (outcome)
    take(*slot, std::move(step));
  else
    fail_on_store(*slot, outcome.error());
  pump_tools(*slot);
  release_held(*slot);
}

// Handles, in order, what waited while the thread was loading or committing,
// until a step starts another commit. The handled ones are erased at the
// end in one go: deltas pile up behind a commit, and erasing each from the
// front would make the drain quadratic. (Not re-entered: loads and commits
// answer by message.)
void agent_logic::release_held(thread_slot& slot) {
  std::size_t handled = 0;
  while (slot.phase == slot_phase::ready && handled < slot.held.size()) {
    held_signal h = std::move(slot.held[handled++]);
    if (h.from_executor) {
      handle_signal(slot, h.s);
    } else {
      run(slot, h.s);
      pump_tools(slot);
    }
  }
  slot.held.erase(slot.held.begin(), slot.held.begin() + static_cast<std::ptrdiff_t>(handled));
}

void agent_logic::fail_on_store(thread_slot& slot, const store_error& e) {
  const react_state& state = slot.conversation.state();
  const error_info why =
      error_info::of(store_error_type(e), "the thread could not be stored (" + e.type + "): " + e.message);
  // Whatever the request had in flight is stopped; its results would have nowhere to go.
  if (state.status == react_status::awaiting_llm) cancel_model_call(state.call_id);
  for (const auto& tool_call_id : slot.tools.running()) cancel_tool_call(state.call_id, tool_call_id);
  const std::string request_id = slot.asks.running();
  const int iterations = state.iteration;
  const token_usage used = state.request_usage;
  slot.conversation.abandon_request(why);
  // The store may hold more than memory does: a commit whose answer was
  // lost with the connection (or that timed out and landed after all), or
  // another writer's. Take what it holds, so that the next request does not
  // meet the same conflict; it waits for the reload.
  const std::string thread_id = slot.conversation.history().id();
  if (stores().immediate()) {
    if (auto held = stores().store().load(thread_id); held && held->rev() != slot.conversation.history().rev())
      slot.conversation = recovered(stores().store(), std::move(*held), ids(), now_ms());
  } else {
    reload(slot, thread_id);
  }
  if (!request_id.empty()) finish(slot, reply{request_id, why, used, iterations});
}

}  // namespace troupe::detail
