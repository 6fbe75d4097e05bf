// The agent's threads in memory: loaded (with their lease) from the store,
// on a store thread when the store does I/O; snapshots; leases renewed,
// given back and taken again; idle threads unloaded; the agent's quitting.

#include "actors/detail/agent_state.hpp"
#include "runtime/detail/thrown_by.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>

namespace troupe::detail {

// The thread's slot, in memory (or being loaded) from now on; or the
// reply refusing `request_id` when the store could not give the thread.
std::variant<thread_slot*, reply> agent_logic::slot_for(const std::string& thread_id, const std::string& request_id) {
  thread_slot* slot = st_.threads.find(thread_id);
  if (!slot) {
    if (stores().immediate()) {
      auto loaded = load_thread(stores().store(), thread_id, ids(), now_ms());
      if (!loaded) return refused(request_id, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
      slot = &st_.threads.insert(thread_id, thread_slot(std::move(*loaded), st_.profile->max_queued_asks), steady_ms());
      report(telemetry_kind::thread_loaded, thread_id, {});
      schedule_expiry(*slot);
    } else {
      slot = &begin_load(thread_id);
    }
  }
  st_.threads.touch(thread_id, steady_ms());
  return slot;
}

// A slot for a thread a store thread is loading (and repairing, as after
// a crash); its asks wait for on_loaded.
thread_slot& agent_logic::begin_load(const std::string& thread_id) {
  thread_slot& slot = st_.threads.insert(
      thread_id,
      thread_slot(react_thread(thread(thread_id, now_ms())), st_.profile->max_queued_asks, slot_phase::loading),
      steady_ms());
  load_async(thread_id);
  return slot;
}

// Takes the thread's lease and loads it, on a store thread; on_loaded
// gets both (always: a store that throws is an `internal` error). A thread
// another owner holds is not loaded ("owned"); a lease taken for a load
// that failed, or for an agent gone meanwhile, is given back at once.
void agent_logic::load_async(const std::string& thread_id) {
  if (!st_.alive) st_.alive = std::make_shared<std::atomic<bool>>(true);
  // Seeded, what the load stamps and names (a new thread, a repair) comes
  // from the agent's clock and ids, read here in the agent's own order.
  std::optional<std::int64_t> stamp;
  std::optional<std::uint64_t> id_seed;
  if (st_.ctx->seed) {
    stamp = now_ms();
    id_seed = ids().next_u64();
  }
  // In a cluster the lease is taken under the grant of the agent's shard.
  store_executor::lease_taker take;
  if (st_.ctx->take_lease)
    take = [fn = st_.ctx->take_lease, agent_id = st_.id, thread_id, owner = st_.ctx->owner_id,
            ttl = st_.ctx->lease_ttl](std::int64_t now) { return fn(agent_id, thread_id, owner, now, ttl); };
  stores().acquire_lease_then(
      thread_id, st_.ctx->owner_id, st_.ctx->lease_ttl, std::move(take),
      [self = handle(), store = stores().shared_store(), deadline = stores().deadline(), alive = st_.alive, thread_id,
       stamp, id_seed](store_job_status why, stored<thread_lease> taken) {
        loaded_thread loaded = not_run(why, deadline);
        lease_held lease;
        if (taken) lease = std::move(*taken);
        if (why == store_job_status::run && alive->load()) {
          if (!taken) {
            loaded = taken.error();
          } else if (auto what = thrown_by([&] {
                       // The agent's own source is not for other threads.
                       random_ids ids = id_seed ? random_ids(*id_seed) : random_ids();
                       loaded = load_thread(*store, thread_id, ids, stamp.value_or(wall_clock_ms()), &*lease);
                     })) {
            loaded = store_error{"internal", "the store threw: " + *what};
          }
        }
        if (lease && (!loaded || !alive->load())) {
          thrown_by([&] { store->release_lease(thread_id, *lease); });
          lease.reset();
        }
        caf::anon_send(self, loaded_atom::value, thread_id, std::move(loaded), std::move(lease));
      });
}

// A thread loaded by a store thread (see begin_load), or the store's error.
void agent_logic::on_loaded(const std::string& thread_id, loaded_thread& loaded, lease_held& lease) {
  thread_slot* slot = st_.threads.find(thread_id);
  if (!slot || slot->phase != slot_phase::loading) {
    if (lease) release(thread_id, *lease);  // nobody wants it any more
    return;
  }
  if (!loaded) {
    fail_every_ask(*slot, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
    fail_decisions(&thread_id, store_error_type(loaded.error()), not_loaded(thread_id, loaded.error()));
    st_.threads.erase(thread_id);
    return;
  }
  slot->conversation = std::move(*loaded);
  slot->lease = lease ? std::make_unique<thread_lease>(std::move(*lease)) : nullptr;
  slot->phase = slot_phase::ready;
  report(telemetry_kind::thread_loaded, thread_id, {});
  schedule_expiry(*slot);
  release_held(*slot);
}

// A snapshot read from the store for a thread not in memory.
void agent_logic::on_viewed(std::uint64_t no, const std::string& thread_id, stored<thread>& held) {
  if (!st_.snapshots) return;
  auto it = st_.snapshots->waiting.find(no);
  if (it == st_.snapshots->waiting.end()) return;
  it->second.deliver(held ? thread_view(*held) : thread_view(thread(thread_id, now_ms())));
  st_.snapshots->waiting.erase(it);
  if (st_.snapshots->empty()) st_.snapshots.reset();  // numbers start over: none is still awaited
}

// A loaded thread as it is now (what the store holds: not a step whose
// commit is in flight); otherwise the store's, without loading it.
caf::result<thread_view> agent_logic::snapshot(const std::string& requested) {
  const std::string id = requested.empty() ? default_thread_id() : requested;
  if (thread_slot* slot = st_.threads.find(id); slot && slot->phase != slot_phase::loading)
    return slot->conversation.history();
  if (stores().immediate()) {
    if (auto held = stores().store().load(id)) return thread_view(*held);
    return thread_view(thread(id, now_ms()));
  }
  if (!st_.snapshots) st_.snapshots = std::make_unique<snapshot_waiters>();
  const std::uint64_t no = st_.snapshots->next++;
  st_.snapshots->waiting.emplace(no, self_->make_response_promise<thread_view>());
  stores().submit(
      [self = handle(), store = stores().shared_store(), deadline = stores().deadline(), no, id](store_job_status why) {
        stored<thread> held = not_run(why, deadline);
        if (why == store_job_status::run)
          if (auto what = thrown_by([&] { held = store->load(id); }))
            held = store_error{"internal", "the store threw: " + *what};
        caf::anon_send(self, viewed_atom::value, no, id, std::move(held));
      });
  return caf::delegated<thread_view>();
}

void agent_logic::reload(thread_slot& slot, const std::string& thread_id) {
  slot.phase = slot_phase::loading;
  // Taken again with the thread, under a new epoch; the old one is given up
  // (a no-op if it is no longer the thread's), so a failed reload leaves none behind.
  if (slot.lease) release(thread_id, *slot.lease);
  slot.lease.reset();
  load_async(thread_id);
}

// A pause outlives its runtime, and nobody may load its thread again: at
// its start, an agent whose calls may wait for a person (it has approval
// rules or a tool a person answers) reads its open pauses from the store
// and sends each request an approval_tick at its earliest deadline. The
// tick loads the thread, and the default is committed as for a pause in
// memory. Seeded, the tick comes at once instead: the load schedules the
// next from the agent's logical clock (schedule_expiry), and a tick before
// the deadline changes nothing.
void agent_logic::expire_stored_pauses() {
  const react_config& c = *st_.config;
  const bool asks = (c.approvals && !c.approvals->empty()) ||
                    (c.tools && std::any_of(c.tools->begin(), c.tools->end(),
                                            [](const tool_spec& t) { return t.answered_by_person; }));
  if (!asks) return;
  stores().submit([self = handle(), store = stores().shared_store(), id = st_.id,
                   seeded = st_.ctx->seed.has_value()](store_job_status why) {
    if (why != store_job_status::run) return;
    stored<std::vector<open_pause>> found = std::vector<open_pause>{};
    if (thrown_by([&] { found = store->open_pauses(id); }) || !found) return;  // found again at the next load
    std::map<std::pair<std::string, std::string>, std::int64_t> due;           // the earliest deadline of each request
    for (const open_pause& p : *found) {
      auto [it, fresh] = due.try_emplace({p.thread_id, p.request_id}, p.expires_at);
      if (!fresh) it->second = std::min(it->second, p.expires_at);
    }
    const std::int64_t now = wall_clock_ms();
    for (const auto& [where, at] : due) {
      if (at == std::numeric_limits<std::int64_t>::max()) continue;  // no deadline
      const std::int64_t wait = seeded ? 0 : std::max<std::int64_t>(0, at - now);
      caf::delayed_anon_send(self, std::chrono::milliseconds(wait), signal_atom::value, where.first,
                             signal{approval_tick{where.second}});
    }
  });
}

// Gives a lease up, so that another process need not wait for it to expire.
void agent_logic::release(const std::string& thread_id, const thread_lease& lease) {
  stores().release_lease(thread_id, lease);
}

void agent_logic::release_leases() {
  st_.threads.for_each([&](const std::string& id, thread_slot& slot) {
    if (slot.lease) release(id, *slot.lease);
    slot.lease.reset();
  });
}

// After each message: idle threads beyond the limits leave memory.
void agent_logic::unload_idle_threads() {
  st_.threads.evict(steady_ms(), [&](const std::string& id, thread_slot& slot) {
    if (slot.lease) release(id, *slot.lease);
    report(telemetry_kind::thread_unloaded, id, {});
  });
}

// Stops the agent, giving up its leases on the way out; snapshots still
// waiting for the store are answered with an error (CAF does not answer
// the promises of an actor that is gone).
void agent_logic::quit() {
  release_leases();
  if (st_.alive) st_.alive->store(false);
  if (st_.snapshots)
    for (auto& [no, promise] : st_.snapshots->waiting)
      promise.deliver(caf::make_error(caf::sec::request_receiver_down));
  st_.snapshots.reset();
  self_->quit();
}

// Nothing in flight with the store.
bool agent_logic::settled() {
  bool all = true;
  st_.threads.for_each([&](const std::string&, thread_slot& slot) { all = all && slot.phase == slot_phase::ready; });
  return all;
}

// After the store answered: a stopping agent quits once nothing is in
// flight with the store; otherwise idle threads may leave memory.
void agent_logic::after_store_answer() {
  if (st_.quit_when_settled) {
    if (settled()) quit();
    return;
  }
  unload_idle_threads();
}

const char* agent_logic::store_error_type(const store_error& e) {
  if (e.type == "timeout") return error_type::store_timeout;
  if (e.type == "owned") return error_type::thread_owned_elsewhere;
  if (e.type == "fenced") return error_type::lease_lost;
  return error_type::store_failed;
}

std::string agent_logic::not_loaded(const std::string& thread_id, const store_error& e) {
  return "thread " + thread_id + " could not be loaded (" + e.type + "): " + e.message;
}

}  // namespace troupe::detail
