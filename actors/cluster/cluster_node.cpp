#include "actors/cluster/cluster_node.hpp"

#include "actors/detail/agent_tool.hpp"
#include "actors/detail/request_state.hpp"
#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/cluster/shard_of.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/detail/store_executor.hpp"
#include "runtime/store/postgres/postgres_store.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <variant>

namespace troupe {

namespace {

using steady = std::chrono::steady_clock;

// Errors after which the agent may be found elsewhere: its node died or
// was cut off, it answered that it does not run the agent (the shard moved),
// the agent stopped as its shard was drained or lost, or the node lost the
// thread's lease with the shard.
bool holder_may_have_moved(const std::string& type) {
  return type == error_type::node_lost || type == error_type::not_found || type == error_type::shutdown ||
         type == error_type::agent_stopped || type == error_type::lease_lost ||
         type == error_type::thread_owned_elsewhere;
}

node_address parse_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return {text, 0};
  return {text.substr(0, colon), static_cast<std::uint16_t>(std::stoul(text.substr(colon + 1)))};
}

reply failed(const std::string& request_id, const char* type, std::string message) {
  return reply{request_id, error_info::of(type, std::move(message)), {}, 0};
}

}  // namespace

struct routed_ask;

// Routed asks that ended paused. The attempt that paused is kept for a
// cancel, which goes through it to the agent's thread, and that attempt's
// callbacks keep the routed ask: a cycle no reply ends, since the request
// goes on under a decision's handle. Each is held here until a decision
// through this node ends its request, another pause of it takes its place,
// or its approvals expired (the agent ends the pause itself then), and is
// let go of then.
class paused_asks {
 public:
  paused_asks() = default;
  paused_asks(const paused_asks&) = delete;
  paused_asks& operator=(const paused_asks&) = delete;
  ~paused_asks();  // lets go of every one: the node is gone, nothing decides them here
  void hold(const std::string& request_id, std::shared_ptr<routed_ask> r, std::int64_t until_ms, std::int64_t now_ms);
  // A decision through this node ended the request.
  void decided(const std::string& request_id);

 private:
  struct held_ask {
    std::shared_ptr<routed_ask> ask;
    std::int64_t until_ms;
  };
  std::mutex m_;
  std::unordered_map<std::string, held_ask> held_;
  std::int64_t next_purge_ms_ = 0;
};

// One ask or decision through the cluster, over its attempts.
struct routed_ask : std::enable_shared_from_this<routed_ask> {
  std::shared_ptr<request::state> s;
  std::variant<std::string, decision> what;  // the question, or the decision
  ask_options options;                       // without the callbacks, which `s` holds
  steady::time_point give_up;
  std::weak_ptr<paused_asks> paused;

  std::mutex m;
  std::optional<request> current;
  std::optional<std::string> cancelled;

  // The request's end, told once, after its last attempt (settle tells
  // on_event too).
  void finish(reply end) {
    if (auto held = paused.lock()) {
      const std::int64_t now = wall_clock_ms();
      if (end.paused())
        held->hold(s->id, shared_from_this(), until_of(end, now), now);
      else if (decides() && !std::holds_alternative<error_info>(end.outcome))
        held->decided(s->id);
    }
    s->settle(std::move(end));
  }

  // What keeps this ask: its attempt that paused.
  void let_go() {
    std::optional<request> attempt;
    std::lock_guard lock(m);
    attempt.swap(current);
  }

  // When the last of a pause's approvals expires; a day when one has no expiry.
  static std::int64_t until_of(const reply& paused_end, std::int64_t now_ms) {
    std::int64_t until = 0;
    for (const open_approval& a : paused_end.pending) {
      if (a.expires_at == 0) return now_ms + 24 * 3600 * 1000;
      until = std::max(until, a.expires_at);
    }
    return until;
  }

  bool decides() const { return std::holds_alternative<decision>(what); }

  // Asks (or decides at) `target`, an agent here or a remote_agent.
  template <class Target>
  request send_to(const Target& target, ask_options o) const {
    if (const auto* d = std::get_if<decision>(&what)) return target.decide(*d, std::move(o));
    return target.ask(std::get<std::string>(what), std::move(o));
  }
};

void paused_asks::hold(const std::string& request_id, std::shared_ptr<routed_ask> r, std::int64_t until_ms,
                       std::int64_t now_ms) {
  std::vector<std::shared_ptr<routed_ask>> ended;  // let go of outside the lock
  {
    std::lock_guard lock(m_);
    // A later pause of the request (a decision's) takes the earlier one's place.
    auto [it, fresh] = held_.try_emplace(request_id);
    if (!fresh) ended.push_back(std::move(it->second.ask));
    it->second = held_ask{std::move(r), until_ms};
    if (now_ms >= next_purge_ms_) {
      next_purge_ms_ = now_ms + 60'000;
      for (auto i = held_.begin(); i != held_.end();)
        if (i->second.until_ms < now_ms) {
          ended.push_back(std::move(i->second.ask));
          i = held_.erase(i);
        } else {
          ++i;
        }
    }
  }
  for (auto& a : ended) a->let_go();
}

void paused_asks::decided(const std::string& request_id) {
  std::shared_ptr<routed_ask> ended;
  {
    std::lock_guard lock(m_);
    auto it = held_.find(request_id);
    if (it == held_.end()) return;
    ended = std::move(it->second.ask);
    held_.erase(it);
  }
  ended->let_go();
}

paused_asks::~paused_asks() {
  for (auto& [id, held] : held_) held.ask->let_go();
}

struct cluster_agent::impl : std::enable_shared_from_this<cluster_agent::impl> {
  cluster_node_options options;
  std::string node_id;
  std::shared_ptr<postgres_store> store;
  // Snapshots' reads of the store, bounded by their timeout.
  std::unique_ptr<store_executor> reads;
  std::unordered_map<std::uint32_t, std::vector<agent_spec>> specs_by_shard;

  // The grants this node holds and may take thread leases under: a lost
  // shard is struck off before its agents are stopped, a drained one once
  // they stopped (its running requests commit under it until then).
  mutable std::mutex held_mutex;
  std::unordered_map<std::uint32_t, shard_lease> held;

  std::unique_ptr<runtime> rt;
  std::unique_ptr<node> transport;
  std::unique_ptr<cluster_membership> members;

  // Starting and stopping agents and retries run here, off the membership's
  // thread (whose heartbeats must not wait for agents) and off the runtime's.
  std::mutex work_mutex;
  std::condition_variable work_ready;
  std::multimap<steady::time_point, std::function<void(bool run)>> work;
  bool work_stopping = false;
  std::thread worker;

  std::shared_ptr<paused_asks> paused = std::make_shared<paused_asks>();
  std::atomic<std::uint64_t> local_asks{0}, remote_asks{0}, retries{0};
  std::atomic<bool> closing{false};

  explicit impl(cluster_node_options o) : options(std::move(o)) {}

  void start(cluster_node& outer) {
    node_id = options.cluster.node_id.empty() ? made_up_node_id() : options.cluster.node_id;
    options.cluster.node_id = node_id;
    for (const agent_spec& spec : options.agents)
      specs_by_shard[shard_of(spec.id, options.cluster.shards)].push_back(spec);
    store = std::make_shared<postgres_store>(options.cluster.conninfo);
    reads = std::make_unique<store_executor>(store, store_executor_options{.threads = 2});
    runtime_options ro = options.runtime;
    ro.store = options.wrap_threads ? options.wrap_threads(store) : store;
    ro.owner_id = node_id;
    ro.take_lease = [weak = weak_from_this()](const std::string& agent_id, const std::string& thread_id,
                                              const std::string& owner, std::int64_t now_ms,
                                              std::chrono::milliseconds ttl) -> stored<thread_lease> {
      auto self = weak.lock();
      if (!self) return store_error{"fenced", "the node is closed"};
      const std::uint32_t shard = shard_of(agent_id, self->options.cluster.shards);
      std::optional<shard_lease> grant;
      {
        std::lock_guard lock(self->held_mutex);
        if (auto it = self->held.find(shard); it != self->held.end()) grant = it->second;
      }
      if (!grant)
        return store_error{"fenced", "node " + self->node_id + " does not hold shard " + std::to_string(shard) +
                                         " of agent " + agent_id};
      return self->store->acquire_lease_in_shard(thread_id, owner, *grant, now_ms, ttl);
    };
    rt = std::make_unique<runtime>(std::move(ro));
    node_options to = options.transport;
    if (!to.listen_port) to.listen_port = 0;
    transport = std::make_unique<node>(*rt, std::move(to));
    options.cluster.address = transport->address()->to_string();
    options.cluster.build_id = cluster_build_id();
    worker = std::thread([this] { work_loop(); });
    if (options.prepare) options.prepare(outer);
    cluster_hooks hooks;
    hooks.acquired = [this](const shard_lease& l) {
      {
        std::lock_guard lock(held_mutex);
        held[l.shard] = l;
      }
      post({}, [this, shard = l.shard](bool run) {
        if (run) start_agents(shard);
      });
    };
    hooks.drain = [this](const shard_lease& l, std::function<void()> drained) {
      post({}, [this, l, drained = std::move(drained)](bool run) {
        if (run)
          drain_agents(l, std::move(drained));
        else
          drained();
      });
    };
    hooks.lost = [this](const shard_lease& l) {
      strike_off(l);
      post({}, [this, shard = l.shard](bool run) {
        if (run) stop_agents(shard);
      });
    };
    members = std::make_unique<cluster_membership>(options.cluster, std::move(hooks));
  }

  void strike_off(const shard_lease& l) {
    std::lock_guard lock(held_mutex);
    if (auto it = held.find(l.shard); it != held.end() && it->second.epoch == l.epoch) held.erase(it);
  }

  // Every node is given the same specs: an id none has is no agent anywhere.
  bool knows(const std::string& agent_id) const {
    auto it = specs_by_shard.find(shard_of(agent_id, options.cluster.shards));
    return it != specs_by_shard.end() &&
           std::any_of(it->second.begin(), it->second.end(), [&](const agent_spec& s) { return s.id == agent_id; });
  }

  bool holds(std::uint32_t shard) {
    std::lock_guard lock(held_mutex);
    return held.count(shard) > 0;
  }

  void start_agents(std::uint32_t shard) {
    if (!holds(shard)) return;  // lost again before its agents started
    auto it = specs_by_shard.find(shard);
    if (it == specs_by_shard.end()) return;
    for (const agent_spec& spec : it->second) {
      if (rt->find_agent(spec.id)) continue;
      try {
        rt->spawn_agent(spec);
      } catch (const std::exception&) {
        // A spec every node is given cannot start here either: its asks
        // end with not_found, as on a single runtime.
      }
    }
  }

  // A drained shard's agents finish the requests they run and hold queued,
  // refusing new asks meanwhile (their callers ask again at the next
  // holder), and then stop; the grant is struck off after, so the running
  // requests' commits land under it. A drain the membership would give up
  // on (drain_timeout) stops them a heartbeat before: their requests end
  // then, rather than have their commits refused once the shard moved.
  void drain_agents(const shard_lease& l, std::function<void()> drained) {
    std::vector<agent> agents;
    if (auto it = specs_by_shard.find(l.shard); it != specs_by_shard.end())
      for (const agent_spec& spec : it->second)
        if (auto a = rt->find_agent(spec.id)) agents.push_back(*a);
    const auto& c = options.cluster;
    const auto patience = std::max(c.drain_timeout / 2, c.drain_timeout - c.heartbeat_interval);
    auto left = std::make_shared<std::atomic<std::size_t>>(agents.size() + 1);
    auto one_stopped = [weak = weak_from_this(), l, left, drained = std::move(drained)](bool) {
      if (left->fetch_sub(1) != 1) return;
      if (auto self = weak.lock()) {
        self->strike_off(l);
        // Lost and granted again while it drained: its agents start again.
        self->start_again_if_held(l.shard);
      }
      drained();
    };
    for (const agent& a : agents) a.drain(patience, one_stopped);
    one_stopped(true);
  }

  // A lost shard's agents stop at once. Not waited for: a stop that takes
  // long (a slow commit) must not hold the node's thread, and a shard
  // granted again before an agent was gone finds it still running, so each
  // stopped agent is started again if its shard is held by then.
  void stop_agents(std::uint32_t shard) {
    if (holds(shard)) return;  // granted again meanwhile
    auto it = specs_by_shard.find(shard);
    if (it == specs_by_shard.end()) return;
    for (const agent_spec& spec : it->second)
      if (auto a = rt->find_agent(spec.id))
        a->drain(std::chrono::milliseconds(0), [weak = weak_from_this(), shard](bool) {
          if (auto self = weak.lock()) self->start_again_if_held(shard);
        });
  }

  void start_again_if_held(std::uint32_t shard) {
    if (holds(shard))
      post({}, [this, shard](bool run) {
        if (run) start_agents(shard);
      });
  }

  void post(std::chrono::milliseconds delay, std::function<void(bool run)> f) {
    {
      std::lock_guard lock(work_mutex);
      if (!work_stopping) {
        work.emplace(steady::now() + delay, std::move(f));
        work_ready.notify_one();
        return;
      }
    }
    f(false);
  }

  void work_loop() {
    std::unique_lock lock(work_mutex);
    for (;;) {
      if (work_stopping) break;
      if (work.empty()) {
        work_ready.wait(lock);
        continue;
      }
      auto first = work.begin();
      if (first->first > steady::now()) {
        work_ready.wait_until(lock, first->first);
        continue;
      }
      auto f = std::move(first->second);
      work.erase(first);
      lock.unlock();
      f(true);
      lock.lock();
    }
    auto left = std::move(work);
    work.clear();
    lock.unlock();
    for (auto& [when, f] : left) f(false);
  }

  void close() {
    if (closing.exchange(true)) return;
    // Halted, not destroyed: no hook runs after this, and what still routes
    // (a retry on the node's thread, a reply on the runtime's) may read the
    // membership until the node is gone.
    if (members) members->halt();
    {
      std::lock_guard lock(work_mutex);
      work_stopping = true;
      work_ready.notify_all();
    }
    if (worker.joinable()) worker.join();
    transport.reset();
    if (rt) rt->shutdown();
  }

  // --- routing ---------------------------------------------------------------

  void attempt(const std::shared_ptr<routed_ask>& r, const std::string& agent_id) {
    std::optional<std::string> cancelled;
    {
      std::lock_guard lock(r->m);
      cancelled = r->cancelled;
    }
    if (cancelled) {
      r->finish(failed(r->s->id, error_type::cancelled, *cancelled));
      return;
    }
    const std::uint32_t shard = shard_of(agent_id, options.cluster.shards);
    std::optional<shard_location> where;
    try {
      where = members->locate(agent_id);
    } catch (const std::exception& e) {
      again(r, agent_id, failed(r->s->id, error_type::node_lost, std::string("cannot locate: ") + e.what()));
      return;
    }
    if (!where) {
      again(r, agent_id,
            failed(r->s->id, error_type::node_lost,
                   "no node holds shard " + std::to_string(shard) + " of agent " + agent_id + " now"));
      return;
    }
    ask_options o = r->options;
    o.request_id = r->s->id;
    if (r->s->on_event)
      o.on_event = [r](const stream_event& e) {
        // The request's end is told once, after its last attempt.
        if (!std::holds_alternative<request_finished_event>(e)) r->s->notify(e);
      };
    const bool remote = where->node_id != node_id;
    if (remote && std::this_thread::get_id() != worker.get_id()) {
      // Sent from the node's own thread: the transport's link to a peer is
      // spawned by the first ask to it, on the asking thread, and CAF then
      // holds the transport's end for that thread (for good when it is one
      // of the runtime's actor threads, which end after the transport, as
      // an agent tool's calls are). The node's thread ends before it.
      post({}, [weak = weak_from_this(), r, agent_id](bool run) {
        auto self = weak.lock();
        if (run && self)
          self->attempt(r, agent_id);
        else
          r->finish(failed(r->s->id, error_type::shutdown, "the node is closed"));
      });
      return;
    }
    o.on_reply = [weak = weak_from_this(), r, agent_id, shard, remote, holder = *where](const reply& end) {
      auto self = weak.lock();
      const auto* error = std::get_if<error_info>(&end.outcome);
      if (!self || !error || !holder_may_have_moved(error->type) || self->closing) {
        r->finish(end);
        return;
      }
      if (remote && (error->type == error_type::node_lost || error->type == error_type::not_found))
        self->members->forget(shard);
      if (r->decides() && error->type == error_type::not_found) {
        self->refused_or_again(r, agent_id, holder, end);
        return;
      }
      self->again(r, agent_id, end);
    };
    std::optional<request> sent;
    if (!remote) {
      auto a = rt->find_agent(agent_id);
      if (!a) {
        // Granted here, its agents not started yet.
        again(r, agent_id, failed(r->s->id, error_type::not_found, "agent " + agent_id + " is not running yet"));
        return;
      }
      ++local_asks;
      sent = r->send_to(*a, std::move(o));
    } else {
      ++remote_asks;
      sent = r->send_to(transport->agent_at(parse_address(where->address), agent_id), std::move(o));
    }
    {
      std::lock_guard lock(r->m);
      r->current = *sent;
      cancelled = r->cancelled;
    }
    if (cancelled) sent->cancel(*cancelled);
  }

  // After `last`, asks again once the holder may have changed, unless the
  // route's time is up: under the same id, as a retry (ask_options::retry),
  // even when the thread holds some of the request. The agent commits none
  // of it twice (it answers an ended request as it ended, and goes on with
  // one cut off), and the dead holder commits nothing more: the new
  // holder's grant revoked its thread leases.
  void again(const std::shared_ptr<routed_ask>& r, const std::string& agent_id, reply last) {
    if (steady::now() >= r->give_up) {
      r->finish(std::move(last));
      return;
    }
    const auto pause = std::max(std::chrono::milliseconds(5), options.cluster.heartbeat_interval / 2);
    post(pause, [weak = weak_from_this(), r, agent_id, last = std::move(last)](bool run) mutable {
      auto self = weak.lock();
      if (!run || !self || self->closing) {
        r->finish(std::move(last));
        return;
      }
      // A decision sent again is answered as the first; an ask sent again is
      // marked as a retry, so that the agent commits none of it twice.
      if (!r->decides()) r->options.retry = true;
      self->retry(r, agent_id);
    });
  }

  void retry(const std::shared_ptr<routed_ask>& r, const std::string& agent_id) {
    ++retries;
    attempt(r, agent_id);
  }

  // A decision's not_found is the agent's answer (no call of that request
  // waits) when the agent was where it went: the holder that answered
  // holds the shard still, under the same grant, or the agent runs here
  // still. Otherwise the node no longer ran the agent, and it is located
  // again. Off the runtime's threads: locating may read the database.
  void refused_or_again(const std::shared_ptr<routed_ask>& r, const std::string& agent_id, const shard_location& holder,
                        reply end) {
    post({}, [weak = weak_from_this(), r, agent_id, holder, end = std::move(end)](bool run) mutable {
      auto self = weak.lock();
      if (!run || !self) {
        r->finish(std::move(end));
        return;
      }
      bool there = false;
      if (holder.node_id == self->node_id) {
        there = self->rt->find_agent(agent_id).has_value();
      } else {
        try {
          const auto now = self->members->locate(agent_id);
          there = now && now->node_id == holder.node_id && now->epoch == holder.epoch;
        } catch (const std::exception&) {
        }
      }
      if (there)
        r->finish(std::move(end));
      else
        self->again(r, agent_id, std::move(end));
    });
  }

  // Reads thread_id from the cluster's store on a store thread; gives up
  // waiting after `timeout` (the read then ends unheard).
  std::optional<thread_view> read_thread(const std::string& thread_id, std::chrono::milliseconds timeout) {
    auto answer = std::make_shared<std::promise<std::optional<thread_view>>>();
    auto ready = answer->get_future();
    reads->submit([answer, store = store, thread_id](store_job_status why) {
      std::optional<thread_view> out;
      if (why == store_job_status::run) {
        try {
          if (auto held = store->load(thread_id))
            out = thread_view(*held);
          else if (held.error().type == "not_found")
            out = thread_view(thread(thread_id, wall_clock_ms()));
        } catch (const std::exception&) {
        }
      }
      answer->set_value(std::move(out));
    });
    if (ready.wait_for(timeout) != std::future_status::ready) return std::nullopt;
    return ready.get();
  }
};

cluster_node::cluster_node(cluster_node_options options)
    : impl_(std::make_shared<cluster_agent::impl>(std::move(options))) {
  try {
    impl_->start(*this);
  } catch (...) {
    impl_->close();
    throw;
  }
}

cluster_node::~cluster_node() { impl_->close(); }

const std::string& cluster_node::id() const { return impl_->node_id; }
node_address cluster_node::address() const { return *impl_->transport->address(); }
cluster_agent cluster_node::agent(std::string agent_id) { return cluster_agent(impl_, std::move(agent_id)); }
bool cluster_node::leave(std::chrono::milliseconds timeout) { return impl_->members->leave(timeout); }
runtime& cluster_node::local() { return *impl_->rt; }
cluster_membership& cluster_node::membership() { return *impl_->members; }

cluster_route_counters cluster_node::route_counters() const {
  return {impl_->local_asks.load(), impl_->remote_asks.load(), impl_->retries.load()};
}

namespace {

// Routes `what` to agent_id's holder, over as many attempts as it takes.
request route(const std::shared_ptr<cluster_agent::impl>& node, const std::string& agent_id,
              std::variant<std::string, decision> what, std::string request_id, ask_options options) {
  auto r = std::make_shared<routed_ask>();
  r->s = std::make_shared<request::state>();
  r->s->id = std::move(request_id);
  r->s->agent_id = agent_id;
  r->s->thread_id = options.thread_id;
  r->s->on_event = std::move(options.on_event);
  r->s->on_reply = std::move(options.on_reply);
  r->what = std::move(what);
  r->options = std::move(options);
  r->give_up = steady::now() + node->options.route_timeout;
  r->paused = node->paused;
  r->s->cancel_elsewhere = [weak = std::weak_ptr<routed_ask>(r)](std::string reason) {
    auto r = weak.lock();
    if (!r) return;
    std::optional<request> now;
    {
      std::lock_guard lock(r->m);
      r->cancelled = reason;
      now = r->current;
    }
    if (now) now->cancel(std::move(reason));
  };
  request handle(r->s);
  if (node->closing) {
    r->s->settle(failed(r->s->id, error_type::shutdown, "the node is closed"));
    return handle;
  }
  if (!node->knows(agent_id)) {
    r->finish(failed(r->s->id, error_type::not_found, "no agent " + agent_id + " in this cluster"));
    return handle;
  }
  node->attempt(r, agent_id);
  return handle;
}

request ask_through(const std::shared_ptr<cluster_agent::impl>& node, const std::string& agent_id, std::string question,
                    ask_options options) {
  thread_local random_ids request_ids;
  std::string id = options.request_id.empty() ? request_ids.next("req") : options.request_id;
  return route(node, agent_id, std::move(question), std::move(id), std::move(options));
}

request decide_through(const std::shared_ptr<cluster_agent::impl>& node, const std::string& agent_id, decision d,
                       ask_options options) {
  thread_local random_ids keys;
  if (d.idempotency_key.empty()) d.idempotency_key = keys.next("key");
  std::string id = d.request_id;
  return route(node, agent_id, std::move(d), std::move(id), std::move(options));
}

}  // namespace

request cluster_agent::ask(std::string question, ask_options options) const {
  return ask_through(node_, id_, std::move(question), std::move(options));
}

request cluster_agent::decide(decision d, ask_options options) const {
  return decide_through(node_, id_, std::move(d), std::move(options));
}

std::optional<thread_view> cluster_agent::snapshot(const std::string& thread_id,
                                                   std::chrono::milliseconds timeout) const {
  if (node_->closing || !node_->knows(id_)) return std::nullopt;
  return node_->read_thread(thread_id.empty() ? default_thread_of(id_) : thread_id, timeout);
}

bool cluster_agent::running() const {
  if (node_->closing || !node_->knows(id_)) return false;
  try {
    return node_->members->locate(id_).has_value();
  } catch (const std::exception&) {
    return false;  // the database cannot tell: no holder known to be live
  }
}

std::shared_ptr<postgres_store> cluster_node::store() const { return impl_->store; }

void cluster_node::add_agent_tool(std::string tool_name, std::string agent_id, std::string description,
                                  std::chrono::milliseconds timeout) {
  // Weak: the runtime, which holds the tool, is the node's.
  auto reach = [weak = std::weak_ptr<cluster_agent::impl>(impl_)] {
    auto node = weak.lock();
    if (!node || node->closing) throw tool_failure(error_type::shutdown, "the node is closed");
    return node;
  };
  impl_->rt->tools().add(detail::agent_tool(
      std::move(tool_name), agent_id, std::move(description), timeout,
      [reach, agent_id](std::string question, ask_options o) {
        return ask_through(reach(), agent_id, std::move(question), std::move(o));
      },
      [reach](const std::string& agent_id, const std::string& thread_id, decision d,
              std::function<void(const reply&)> answered) {
        std::shared_ptr<cluster_agent::impl> node;
        try {
          node = reach();
        } catch (const tool_failure& e) {
          answered(failed(d.request_id, e.type.c_str(), e.what()));
          return;
        }
        ask_options o;
        o.thread_id = thread_id;
        o.on_reply = std::move(answered);
        decide_through(node, agent_id, std::move(d), std::move(o));
      }));
}

}  // namespace troupe
