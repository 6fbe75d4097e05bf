#include "runtime/cluster/cluster_membership.hpp"

#include "runtime/cluster/detail/cluster_tables.hpp"
#include "runtime/cluster/shard_of.hpp"
#include "runtime/detail/thrown_by.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/postgres/detail/result.hpp"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace troupe {

using postgres::param;
using postgres::result;
using postgres::run;
using pool_lease = postgres::connection_pool::lease;
using steady = std::chrono::steady_clock;

namespace {

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

struct held_shard {
  std::uint64_t epoch = 0;
  bool draining = false;
  bool drained = false;
  std::chrono::steady_clock::time_point drain_started{};
};

// A hook to call once the round's state is written, outside the lock.
using pending_hook = std::function<void()>;

}  // namespace

struct cluster_membership::state : std::enable_shared_from_this<cluster_membership::state> {
  cluster_options o;
  // This process's own, written into the node's row as it joins and named
  // by its heartbeats, renewals and grants: a process that joins with the
  // same node id (this one was silent past dead_after) writes another, and
  // from then on this one's statements find nothing of theirs.
  std::string incarnation = random_ids().next("incarnation");
  cluster_hooks hooks;
  std::uint32_t shards = 0;
  std::unique_ptr<postgres::connection_pool> pool;

  mutable std::mutex mutex;
  std::condition_variable wake;        // the rounds' thread: stop, leave, a shard drained
  std::condition_variable round_done;  // wait_rounds, leave
  std::map<std::uint32_t, held_shard> held;
  std::unordered_map<std::uint32_t, shard_location> located;
  std::uint64_t rounds = 0;
  cluster_counters counted;  // rounds aside, under `mutex` too
  bool stopping = false;
  bool stopped = false;
  bool leaving = false;
  bool left = false;
  bool superseded = false;  // another process joined with this node's id
  std::once_flag joined;    // the rounds' thread, by the first stop()
  bool early = false;       // a round is due before the interval is up
  std::optional<std::string> last_error;
  // This node's own bound on its leases: the time its last renewal was sent,
  // plus the ttl. Past it, with no renewal since, it treats them as lost
  // whatever the database says (it may not be able to reach it).
  steady::time_point valid_until{};
  std::thread thread;

  result must(PGconn* c, result r, const std::string& what) {
    if (!r.ok()) throw cluster_error(cluster_error::kind::io, "cluster: " + r.error(c, what).message);
    return r;
  }

  void join(PGconn* c) {
    const std::uint32_t existing = cluster::make_cluster(c, o.shards);
    if (existing != o.shards)
      throw cluster_error(cluster_error::kind::shard_count,
                          "cluster: this node is configured with " + std::to_string(o.shards) +
                              " shards, but the cluster in this database has " + std::to_string(existing) +
                              "; the shard count is fixed for a cluster's life (an agent's shard depends on it)");
    shards = existing;
    // A row of the same id is taken over only from a node that is dead or
    // silent past dead_after: two live nodes must never share an id.
    result r = must(c,
                    run(c,
                        "INSERT INTO troupe_nodes AS n (id, address, build_id, state, started_at, heartbeat_at, "
                        "incarnation) "
                        "VALUES ($1, $2, $3, 'joining', now(), now(), $5) "
                        "ON CONFLICT (id) DO UPDATE SET address = $2, build_id = $3, state = 'joining', "
                        "started_at = now(), heartbeat_at = now(), incarnation = $5 "
                        "WHERE n.state = 'dead' OR n.heartbeat_at < now() - $4::bigint * interval '1 millisecond' "
                        "RETURNING 1",
                        {o.node_id, o.address, o.build_id, ms(o.dead_after), incarnation}),
                    "register node " + o.node_id);
    if (r.rows() == 0)
      throw cluster_error(cluster_error::kind::node_id_taken,
                          "cluster: a live node already has the id " + o.node_id + " (it heartbeat within " +
                              ms(o.dead_after) + " ms); give this node another id, or wait for that one to be dead");
  }

  void loop() {
    pthread_setname_np(pthread_self(), "troupe.cluster");
    std::unique_lock lock(mutex);
    while (!stopping) {
      // Rounds start an interval apart, however long one takes.
      const steady::time_point started = steady::now();
      lock.unlock();
      std::vector<pending_hook> hooks_due;
      std::optional<std::string> failed;
      if (auto thrown = thrown_by([&] { round(hooks_due); })) failed = *thrown;
      lock.lock();
      last_error = failed;
      // Replaced: no round of this incarnation can do anything right again.
      if (superseded) stopping = stopped = true;
      if (failed) ++counted.failed_rounds;
      if (failed && steady::now() >= valid_until && !held.empty()) {
        // Unreachable past the lease: another node may hold these by now.
        for (const auto& [shard, h] : held) hooks_due.push_back(lost_hook(shard, h.epoch));
        held.clear();
      }
      lock.unlock();
      for (pending_hook& h : hooks_due) thrown_by(h);
      lock.lock();
      ++rounds;
      round_done.notify_all();
      wake.wait_until(lock, started + o.heartbeat_interval, [&] { return stopping || early; });
      early = false;
    }
  }

  // Made with `mutex` held, as the other two.
  pending_hook lost_hook(std::uint32_t shard, std::uint64_t epoch) {
    ++counted.lost;
    return [this, lease = shard_lease{shard, o.node_id, epoch}] {
      if (hooks.lost) hooks.lost(lease);
    };
  }
  pending_hook acquired_hook(std::uint32_t shard, std::uint64_t epoch) {
    ++counted.acquired;
    return [this, lease = shard_lease{shard, o.node_id, epoch}] {
      if (hooks.acquired) hooks.acquired(lease);
    };
  }
  pending_hook drain_hook(std::uint32_t shard, std::uint64_t epoch) {
    std::weak_ptr<state> self = weak_from_this();
    auto drained = [self, shard, epoch] {
      auto s = self.lock();
      if (!s) return;
      std::lock_guard lock(s->mutex);
      auto it = s->held.find(shard);
      if (it == s->held.end() || it->second.epoch != epoch) return;
      it->second.drained = true;
      s->early = true;
      s->wake.notify_all();
    };
    return [this, lease = shard_lease{shard, o.node_id, epoch}, drained] { hooks.drain(lease, drained); };
  }

  void round(std::vector<pending_hook>& due) {
    pool_lease l(*pool);
    if (!l) throw cluster_error(cluster_error::kind::io, "cluster: " + l.failure().message);
    PGconn* c = l.get();
    bool is_leaving = false;
    {
      std::lock_guard lock(mutex);
      is_leaving = leaving;
    }
    if (!heartbeat(c, is_leaving, due)) return;
    must(c,
         run(c,
             "UPDATE troupe_nodes SET state = 'dead' "
             "WHERE state <> 'dead' AND heartbeat_at < now() - $1::bigint * interval '1 millisecond'",
             {ms(o.dead_after)}),
         "declare silent nodes dead");
    must(c,
         run(c,
             "DELETE FROM troupe_nodes "
             "WHERE state = 'dead' AND heartbeat_at < now() - $1::bigint * interval '1 millisecond'",
             {ms(o.forget_dead_after)}),
         "forget long dead nodes");
    renew(c, due);
    const std::vector<node_info> nodes = cluster::read_nodes(c);
    const std::vector<shard_info> table = cluster::read_shards(c);
    remember_locations(nodes, table);
    rebalance(c, is_leaving, nodes, table, due);
  }

  // False once another process has joined with this node's id: this one
  // has dropped everything and its rounds are to stop.
  bool heartbeat(PGconn* c, bool is_leaving, std::vector<pending_hook>& due) {
    // Its own row only, by incarnation; and whose the row is, if not its own.
    result r = must(c,
                    run(c,
                        "WITH beat AS (UPDATE troupe_nodes SET heartbeat_at = now(), state = CASE "
                        "  WHEN state = 'dead' THEN 'dead' WHEN $2 THEN 'leaving' WHEN state = 'joining' THEN 'active' "
                        "  ELSE state END "
                        "  WHERE id = $1 AND incarnation = $3 RETURNING state) "
                        "SELECT (SELECT state FROM beat), (SELECT incarnation FROM troupe_nodes WHERE id = $1)",
                        {o.node_id, is_leaving ? "true" : "false", incarnation}),
                    "heartbeat");
    const bool mine = !r.null(0, 0);
    if (mine && r.text(0, 0) != "dead") return true;
    const bool replaced = !mine && !r.null(0, 1);
    // Declared dead (paused or cut off past dead_after), its row gone, or
    // replaced: whatever it held may have been taken, and its thread leases
    // revoked. It gives up what is left, and joins again as a new member
    // unless another process has its id now.
    {
      std::lock_guard lock(mutex);
      for (const auto& [shard, h] : held) due.push_back(lost_hook(shard, h.epoch));
      held.clear();
    }
    must(c,
         run(c,
             "UPDATE troupe_shards SET holder = NULL, lease_until = to_timestamp(0) "
             "WHERE holder = $1 AND holder_incarnation = $2",
             {o.node_id, incarnation}),
         "give up the shards of a node declared dead");
    if (replaced) {
      std::lock_guard lock(mutex);
      superseded = true;
      return false;
    }
    join(c);
    return true;
  }

  void renew(PGconn* c, std::vector<pending_hook>& due) {
    const steady::time_point sent = steady::now();
    result r = must(c,
                    run(c,
                        "UPDATE troupe_shards SET lease_until = now() + $2::bigint * interval '1 millisecond' "
                        "WHERE holder = $1 AND holder_incarnation = $3 RETURNING shard, epoch",
                        {o.node_id, ms(o.shard_lease_ttl), incarnation}),
                    "renew the shard leases");
    std::map<std::uint32_t, std::uint64_t> renewed;
    for (int i = 0; i < r.rows(); ++i)
      renewed[static_cast<std::uint32_t>(r.int64(i, 0))] = static_cast<std::uint64_t>(r.int64(i, 1));
    std::lock_guard lock(mutex);
    valid_until = sent + o.shard_lease_ttl;
    for (auto it = held.begin(); it != held.end();) {
      auto found = renewed.find(it->first);
      if (found != renewed.end() && found->second == it->second.epoch) {
        ++it;
        continue;
      }
      due.push_back(lost_hook(it->first, it->second.epoch));
      it = held.erase(it);
    }
    // A grant whose answer never came back (the call gave up waiting) is
    // this node's all the same: it was made to this incarnation, not to
    // another process with its id.
    for (const auto& [shard, epoch] : renewed)
      if (!held.count(shard)) {
        held[shard] = held_shard{epoch};
        due.push_back(acquired_hook(shard, epoch));
      }
  }

  void remember_locations(const std::vector<node_info>& nodes, const std::vector<shard_info>& table) {
    std::unordered_map<std::string, const node_info*> by_id;
    for (const node_info& n : nodes) by_id[n.id] = &n;
    std::unordered_map<std::uint32_t, shard_location> now;
    for (const shard_info& s : table) {
      auto n = by_id.find(s.holder);
      if (s.holder.empty() || s.lease_left.count() <= 0 || n == by_id.end() || n->second->state == node_state::dead)
        continue;
      now[s.shard] = shard_location{s.shard, s.holder, n->second->address, s.epoch};
    }
    std::lock_guard lock(mutex);
    located = std::move(now);
  }

  void rebalance(PGconn* c, bool is_leaving, const std::vector<node_info>& nodes, const std::vector<shard_info>& table,
                 std::vector<pending_hook>& due) {
    std::vector<std::string> live;  // sorted by id, as read_nodes reads them
    std::unordered_set<std::string> holders_alive;
    for (const node_info& n : nodes) {
      if (n.state == node_state::dead || n.heartbeat_age >= o.dead_after) continue;
      holders_alive.insert(n.id);
      if (n.state != node_state::leaving) live.push_back(n.id);
    }
    const auto me = std::find(live.begin(), live.end(), o.node_id);
    std::size_t target = 0, my_index = 0;
    if (!is_leaving && me != live.end()) {
      my_index = static_cast<std::size_t>(me - live.begin());
      target = shards / live.size() + (my_index < shards % live.size() ? 1 : 0);
    }

    std::vector<std::pair<std::uint32_t, std::uint64_t>> to_release;
    std::size_t keeping = 0;
    {
      std::lock_guard lock(mutex);
      const steady::time_point now = steady::now();
      for (auto& [shard, h] : held)
        if (h.drained || (h.draining && now - h.drain_started >= o.drain_timeout))
          to_release.emplace_back(shard, h.epoch);
      for (const auto& [shard, h] : held) keeping += h.draining ? 0 : 1;
      // The surplus, from the highest shard down, is drained.
      for (auto it = held.rbegin(); it != held.rend() && keeping > target; ++it) {
        if (it->second.draining) continue;
        it->second.draining = true;
        it->second.drain_started = now;
        --keeping;
        if (hooks.drain) {
          due.push_back(drain_hook(it->first, it->second.epoch));
        } else {  // nothing to stop: given up next round
          it->second.drained = true;
          early = true;
        }
      }
    }
    for (const auto& [shard, epoch] : to_release) {
      must(c,
           run(c,
               "UPDATE troupe_shards SET holder = NULL, lease_until = to_timestamp(0) "
               "WHERE shard = $1 AND holder = $2 AND epoch = $3",
               {std::to_string(shard), o.node_id, std::to_string(epoch)}),
           "release shard " + std::to_string(shard));
      std::lock_guard lock(mutex);
      held.erase(shard);
      located.erase(shard);  // not here any more: read again where it went
      ++counted.released;
    }
    if (keeping >= target) return;

    // Free shards, shards whose lease ran out and shards of dead nodes,
    // starting where this node's share would start, so that nodes joining
    // together do not all reach for the same ones first.
    std::vector<const shard_info*> candidates;
    for (const shard_info& s : table)
      if (s.holder.empty() || s.lease_left.count() <= 0 || !holders_alive.count(s.holder))
        if (s.holder != o.node_id || s.lease_left.count() <= 0) candidates.push_back(&s);
    if (candidates.empty()) return;
    const std::size_t start = live.empty() ? 0 : (my_index * shards / live.size());
    std::stable_partition(candidates.begin(), candidates.end(), [&](const shard_info* s) { return s->shard >= start; });
    for (const shard_info* s : candidates) {
      if (keeping >= target) break;
      {
        std::lock_guard lock(mutex);
        if (held.count(s->shard)) continue;
      }
      if (auto epoch = take(c, *s)) {
        std::lock_guard lock(mutex);
        held[s->shard] = held_shard{*epoch};
        ++keeping;
        due.push_back(acquired_hook(s->shard, *epoch));
      }
    }
  }

  // The compare-and-set of a shard seen at `seen.epoch` (troupe_take_shard):
  // the next epoch is granted to this incarnation if nobody took the shard
  // meanwhile and it is still free, run out or a dead (or replaced) node's;
  // and every thread lease still held under an older epoch of the shard is
  // revoked in the same transaction, so no commit under one goes in again.
  std::optional<std::uint64_t> take(PGconn* c, const shard_info& seen) {
    const auto taken = cluster::take_shard(c, seen.shard, o.node_id, incarnation, seen.epoch, o.shard_lease_ttl);
    if (!taken) return std::nullopt;
    return taken->epoch;
  }

  // The rounds may have stopped already (superseded): the thread is joined
  // all the same, once.
  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
      stopped = true;
    }
    wake.notify_all();
    std::call_once(joined, [this] {
      if (thread.joinable()) thread.join();
    });
    std::lock_guard lock(mutex);
    round_done.notify_all();
  }
};

cluster_membership::cluster_membership(cluster_options options, cluster_hooks hooks) : s_(std::make_shared<state>()) {
  if (options.node_id.empty()) options.node_id = made_up_node_id();
  validate(options);
  s_->o = std::move(options);
  s_->hooks = std::move(hooks);
  s_->pool = cluster::open_pool(s_->o.conninfo, 2, s_->o.connect_timeout, s_->o.statement_timeout);
  {
    pool_lease l(*s_->pool);
    if (!l) throw cluster_error(cluster_error::kind::connect, "cluster: " + l.failure().message);
    s_->join(l.get());
  }
  s_->thread = std::thread([s = s_.get()] { s->loop(); });
}

cluster_membership::~cluster_membership() { halt(); }

const std::string& cluster_membership::node_id() const { return s_->o.node_id; }
const std::string& cluster_membership::incarnation() const { return s_->incarnation; }
std::uint32_t cluster_membership::shard_count() const { return s_->shards; }
std::uint32_t cluster_membership::shard_of(std::string_view agent_id) const {
  return troupe::shard_of(agent_id, s_->shards);
}

std::optional<shard_location> cluster_membership::locate(std::string_view agent_id) {
  const std::uint32_t shard = shard_of(agent_id);
  {
    // Without rounds (the node left) nothing would correct a location kept.
    std::lock_guard lock(s_->mutex);
    if (s_->stopped) s_->located.clear();
    if (auto it = s_->located.find(shard); it != s_->located.end()) return it->second;
  }
  pool_lease l(*s_->pool);
  if (!l) throw cluster_error(cluster_error::kind::io, "cluster: " + l.failure().message);
  PGconn* c = l.get();
  result r = s_->must(c,
                      run(c,
                          "SELECT s.holder, s.epoch, n.address FROM troupe_shards s "
                          "JOIN troupe_nodes n ON n.id = s.holder "
                          "WHERE s.shard = $1 AND s.lease_until > now() AND n.state <> 'dead' "
                          "AND (n.incarnation = s.holder_incarnation OR n.incarnation = '')",
                          {std::to_string(shard)}),
                      "locate shard " + std::to_string(shard));
  if (r.rows() == 0) return std::nullopt;
  shard_location found{shard, r.text(0, 0), r.text(0, 2), static_cast<std::uint64_t>(r.int64(0, 1))};
  std::lock_guard lock(s_->mutex);
  if (!s_->stopped) s_->located[shard] = found;
  return found;
}

void cluster_membership::forget(std::uint32_t shard) {
  std::lock_guard lock(s_->mutex);
  s_->located.erase(shard);
}

std::vector<shard_lease> cluster_membership::shards_held() const {
  std::lock_guard lock(s_->mutex);
  std::vector<shard_lease> out;
  for (const auto& [shard, h] : s_->held) out.push_back(shard_lease{shard, s_->o.node_id, h.epoch});
  return out;
}

std::vector<node_info> cluster_membership::nodes() {
  pool_lease l(*s_->pool);
  if (!l) throw cluster_error(cluster_error::kind::io, "cluster: " + l.failure().message);
  return cluster::read_nodes(l.get());
}

bool cluster_membership::leave(std::chrono::milliseconds timeout) {
  const auto until = steady::now() + timeout;
  {
    std::unique_lock lock(s_->mutex);
    if (s_->stopped) return s_->left;
    s_->leaving = true;
    s_->early = true;
    s_->wake.notify_all();
    // One whole round after the flag, so the table says "leaving", and then
    // until nothing is held.
    const std::uint64_t after = s_->rounds + 2;
    s_->round_done.wait_until(lock, until, [&] { return s_->stopped || (s_->rounds >= after && s_->held.empty()); });
    if (!s_->held.empty() || s_->rounds < after) {
      lock.unlock();
      s_->stop();
      return false;
    }
  }
  s_->stop();
  pool_lease l(*s_->pool);
  if (!l) return false;
  if (!run(l.get(), "DELETE FROM troupe_nodes WHERE id = $1", {s_->o.node_id}).ok()) return false;
  std::lock_guard lock(s_->mutex);
  s_->left = true;
  return true;
}

void cluster_membership::halt() { s_->stop(); }

std::uint64_t cluster_membership::rounds() const {
  std::lock_guard lock(s_->mutex);
  return s_->rounds;
}

bool cluster_membership::wait_rounds(std::uint64_t more, std::chrono::milliseconds timeout) {
  std::unique_lock lock(s_->mutex);
  const std::uint64_t target = s_->rounds + more;
  return s_->round_done.wait_for(lock, timeout, [&] { return s_->stopped || s_->rounds >= target; }) &&
         s_->rounds >= target;
}

cluster_counters cluster_membership::counters() const {
  std::lock_guard lock(s_->mutex);
  cluster_counters out = s_->counted;
  out.rounds = s_->rounds;
  return out;
}

bool cluster_membership::superseded() const {
  std::lock_guard lock(s_->mutex);
  return s_->superseded;
}

std::optional<std::string> cluster_membership::last_error() const {
  std::lock_guard lock(s_->mutex);
  return s_->last_error;
}

}  // namespace troupe
