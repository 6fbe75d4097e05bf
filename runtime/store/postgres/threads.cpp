// The thread_store part of the PostgreSQL store.

#include "runtime/store/postgres/postgres_store.hpp"

#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/store/postgres/detail/batch_queue.hpp"
#include "runtime/store/postgres/detail/connection_pool.hpp"
#include "runtime/store/postgres/detail/rows.hpp"

namespace troupe {

namespace json = boost::json;
using lease = postgres::connection_pool::lease;
using postgres::entry_columns;
using postgres::param;
using postgres::parse_object;
using postgres::read_entry;
using postgres::result;
using postgres::run;

namespace {

// The writer's new entries as the JSON array troupe_append expands. Payload
// and refs travel as strings holding their JSON text: json_to_recordset
// would unescape a nested object's strings, and PostgreSQL text cannot hold
// the \u0000 a payload may contain.
std::string entries_json(entry_range entries) {
  std::string out = "[";
  for (const entry& e : entries) {
    if (out.size() > 1) out += ',';
    out += "{\"seq\":";
    out += std::to_string(e.seq);
    out += ",\"id\":";
    append_json_string(out, e.id.view());
    out += ",\"at\":";
    out += std::to_string(e.at);
    out += ",\"kind\":";
    append_json_string(out, e.kind.view());
    // Each text is written once, then escaped once as the string holding it.
    out += ",\"payload\":";
    append_json_string(out, json_text(e.payload));
    out += ",\"refs\":";
    append_json_string(out, json_text(e.refs));
    out += '}';
  }
  out += ']';
  return out;
}

// A refused commit's error, from troupe_append's answer (status, stored_rev,
// holder); none for 'ok' and 'resend'.
std::optional<store_error> refusal(const std::string& status, const std::string& stored_rev, const std::string& holder,
                                   const thread_view& t, std::uint64_t expected_rev, const thread_lease* fence) {
  if (status == "fenced" && fence)
    return fence_refusal(holder.empty() ? std::nullopt
                                        : std::optional<thread_lease>(thread_lease{
                                              holder, static_cast<std::uint64_t>(std::stoull(stored_rev)), 0}),
                         t.id(), *fence);
  if (status == "conflict")
    return store_error{"conflict",
                       "thread " + t.id() + " is at rev " + stored_rev + ", not " + std::to_string(expected_rev)};
  return std::nullopt;
}

}  // namespace

stored<thread> postgres_store::load(const std::string& thread_id) {
  return pool_->read([&](PGconn* c) -> stored<thread> {
    // One statement, so one snapshot for the head and the entries, in one
    // round trip: the entry columns first (read_entry's), the head's after
    // them on every row; a thread without entries gives one row of nulls.
    static const std::string sql = std::string("SELECT ") + entry_columns +
                                   ", h.head_rev, h.head_created, h.head_updated, h.head_metadata::text FROM "
                                   "(SELECT id AS head_id, rev AS head_rev, created_at AS head_created, updated_at AS "
                                   "head_updated, metadata AS head_metadata FROM threads WHERE id = $1) AS h "
                                   "LEFT JOIN entries ON entries.thread_id = h.head_id ORDER BY seq";
    result rows = run(c, sql.c_str(), {thread_id});
    if (!rows.ok()) return rows.error(c, "load " + thread_id);
    if (rows.rows() == 0) return store_error{"not_found", "no thread " + thread_id};
    constexpr int head = 6;  // the first column after entry_columns
    auto metadata = parse_object(rows.text(0, head + 3), "thread " + thread_id + " metadata");
    if (!metadata) return metadata.error();
    std::vector<entry> entries;
    const bool none = rows.null(0, 0);
    entries.reserve(none ? 0 : static_cast<std::size_t>(rows.rows()));
    for (int i = 0; !none && i < rows.rows(); ++i) {
      auto e = read_entry(rows, i, thread_id);
      if (!e) return e.error();
      entries.push_back(std::move(*e));
    }
    auto t = thread::restore(thread_id, static_cast<std::uint64_t>(rows.int64(0, head)), rows.int64(0, head + 1),
                             rows.int64(0, head + 2), std::move(*metadata), std::move(entries));
    if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
    return std::move(*t);
  });
}

stored<std::vector<entry>> postgres_store::request_entries(const std::string& thread_id,
                                                           const std::string& request_id) {
  return pool_->read([&](PGconn* c) -> stored<std::vector<entry>> {
    // The expression is entries_by_request's (migrations.cpp).
    static const std::string sql = std::string("SELECT ") + entry_columns +
                                   " FROM entries WHERE thread_id = $1 AND refs->>'request_id' = $2 ORDER BY seq";
    result rows = run(c, sql.c_str(), {thread_id, request_id});
    if (!rows.ok()) return rows.error(c, "read request " + request_id + " of " + thread_id);
    std::vector<entry> out;
    out.reserve(static_cast<std::size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i) {
      auto e = read_entry(rows, i, thread_id);
      if (!e) return e.error();
      out.push_back(std::move(*e));
    }
    return out;
  });
}

stored<std::vector<open_pause>> postgres_store::open_pauses(const std::string& agent_id) {
  return pool_->read([&](PGconn* c) -> stored<std::vector<open_pause>> {
    // The expressions are entries_approvals' and entries_by_request's (migrations.cpp).
    static const char* sql =
        "SELECT a.thread_id, a.refs->>'request_id', a.refs->>'tool_call_id', "
        "COALESCE(a.payload->>'expires_at', '0') FROM entries a "
        "WHERE a.kind = 'approval_request' AND a.payload->>'agent' = $1 AND NOT EXISTS ("
        "SELECT 1 FROM entries d WHERE d.thread_id = a.thread_id AND d.refs->>'request_id' = a.refs->>'request_id' "
        "AND d.kind IN ('decision', 'tool_result') AND d.refs->>'tool_call_id' = a.refs->>'tool_call_id') "
        "ORDER BY a.thread_id, a.seq";
    result rows = run(c, sql, {agent_id});
    if (!rows.ok()) return rows.error(c, "read the open approval requests of agent " + agent_id);
    std::vector<open_pause> out;
    out.reserve(static_cast<std::size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i)
      out.push_back(open_pause{rows.text(i, 0), rows.text(i, 1), rows.text(i, 2), rows.int64(i, 3)});
    return out;
  });
}

stored<std::uint64_t> postgres_store::append(const thread_view& t, std::uint64_t expected_rev) {
  return append_as(t, expected_rev, nullptr);
}

stored<std::uint64_t> postgres_store::append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                                    const thread_lease& fence) {
  return append_as(t, expected_rev, &fence);
}

stored<std::uint64_t> postgres_store::append_as(const thread_view& t, std::uint64_t expected_rev,
                                                const thread_lease* fence) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  // rev grows by one per entry, so the new entries are the last
  // (rev - expected_rev); the function checks that against the stored size
  // and asks for a resend from the right seq if they differ.
  const std::uint64_t grown = t.rev() >= expected_rev ? t.rev() - expected_rev : 0;
  std::size_t first = grown <= t.size() ? t.size() - grown : 0;
  const std::string metadata = json_text(t.metadata());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const entry_range fresh = t.slice(first, t.size());
    const conversation_touch touch = touch_from(fresh);
    result r = run(
        c,
        "SELECT status, stored_rev, stored_size, holder FROM troupe_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
        "$11, $12, $13, $14, $15)",
        {t.id(), std::to_string(expected_rev), std::to_string(t.rev()), std::to_string(t.size()),
         std::to_string(t.created_at()), std::to_string(t.updated_at()), metadata, std::to_string(first),
         entries_json(fresh), touch.last_message_at ? param(std::to_string(*touch.last_message_at)) : std::nullopt,
         touch.title, std::to_string(wall_clock_ms()), fence ? param(fence->owner) : std::nullopt,
         fence ? param(std::to_string(fence->epoch)) : std::nullopt,
         fence ? param(std::to_string(fence->expires_at_ms)) : std::nullopt});
    if (!r.ok()) return r.error(c, "append to " + t.id());
    const std::string status = r.text(0, 0);
    if (status == "ok") return t.rev();
    if (auto e = refusal(status, r.text(0, 1), r.text(0, 3), t, expected_rev, fence)) return *e;
    if (status != "resend") return store_error{"internal", "troupe_append answered " + status + " for " + t.id()};
    first = static_cast<std::size_t>(r.int64(0, 2));  // resend
  }
  return store_error{"conflict", "thread " + t.id() + " changed while it was being written"};
}

namespace {

// A queued commit as one element of troupe_append_batch's argument: the
// parameters of troupe_append, by name.
void append_commit_json(std::string& out, const postgres::queued_append& a, std::int64_t now_ms) {
  const thread_view& t = a.t;
  const std::uint64_t grown = t.rev() >= a.expected_rev ? t.rev() - a.expected_rev : 0;
  const std::size_t first = grown <= t.size() ? t.size() - grown : 0;
  const entry_range fresh = t.slice(first, t.size());
  const conversation_touch touch = touch_from(fresh);
  auto number = [](auto v) { return std::to_string(v); };
  out += "{\"id\":" + json_text(json::string(t.id())) + ",\"expected\":" + number(a.expected_rev) +
         ",\"rev\":" + number(t.rev()) + ",\"size\":" + number(t.size()) + ",\"created\":" + number(t.created_at()) +
         ",\"updated\":" + number(t.updated_at()) + ",\"metadata\":" + json_text(t.metadata()) +
         ",\"first\":" + number(first) + ",\"entries\":" + entries_json(fresh) +
         ",\"last_message_at\":" + (touch.last_message_at ? number(*touch.last_message_at) : "null") +
         ",\"title\":" + (touch.title ? json_text(json::string(*touch.title)) : "null") + ",\"now\":" + number(now_ms);
  if (a.fence)
    out += ",\"owner\":" + json_text(json::string(a.fence->owner)) + ",\"epoch\":" + number(a.fence->epoch) +
           ",\"lease_until\":" + number(a.fence->expires_at_ms);
  out += "}";
}

// Answers a queued commit or lease take once.
template <class Item, class Outcome>
void answer(Item& a, Outcome outcome) {
  auto done = std::move(a.done);
  a.done = nullptr;
  if (done) done(std::move(outcome));
}

// One call of `sql` whose argument is the batch as a JSON array, each item
// written by `write`, on a pooled connection given back before this returns
// (so before a one-by-one fallback takes its own); a null result when no
// connection could be had.
template <class Item, class Write>
result run_batch(postgres::connection_pool& pool, const char* sql, const std::vector<Item>& batch, Write write) {
  std::string items = "[";
  for (const Item& a : batch) {
    if (items.size() > 1) items += ',';
    write(items, a);
  }
  items += ']';
  lease l(pool);
  if (!l) return result(nullptr);
  return run(l.get(), sql, {items});
}

}  // namespace

void postgres_store::append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence,
                                   append_done done) {
  queue_->submit(postgres::queued_append{
      std::move(t), expected_rev, fence ? std::optional<thread_lease>(*fence) : std::nullopt, std::move(done), {}});
}

std::size_t postgres_store::append_batch(std::vector<postgres::queued_append>& batch) {
  // Each commit on its own, as append() writes it: for a batch of one, and
  // when the batch's call failed (nothing of it was written, unless the
  // connection broke while it committed: then the commits that went in
  // meet a conflict, as any commit whose answer was lost does).
  auto one_by_one = [&](std::vector<postgres::queued_append*> commits) {
    for (postgres::queued_append* a : commits)
      answer(*a, append_as(a->t, a->expected_rev, a->fence ? &*a->fence : nullptr));
    return commits.size();
  };
  std::vector<postgres::queued_append*> all;
  for (auto& a : batch) all.push_back(&a);
  if (batch.size() == 1) return one_by_one(all);

  const std::int64_t now = wall_clock_ms();
  const result r =
      run_batch(*pool_, "SELECT ord, status, stored_rev, stored_size, holder FROM troupe_append_batch($1::json)", batch,
                [now](std::string& out, const postgres::queued_append& a) { append_commit_json(out, a, now); });
  if (r.unanswered()) {  // the server is stuck: one by one, each commit would wait as long again
    for (postgres::queued_append& a : batch) answer(a, r.error(nullptr, "append to " + a.t.id()));
    return 1;
  }
  if (!r.ok() || r.rows() != static_cast<int>(batch.size())) return one_by_one(all);
  std::vector<postgres::queued_append*> resend;
  for (int i = 0; i < r.rows(); ++i) {
    postgres::queued_append& a = batch.at(static_cast<std::size_t>(r.int64(i, 0)));
    const std::string status = r.text(i, 1);
    if (status == "ok")
      answer(a, a.t.rev());
    else if (status == "resend" || status == "busy")
      // resend: a thread restored with rev > size, append_as finds the right
      // seq; busy: its row is held by another transaction, and append_as
      // waits for it no longer than lock_timeout.
      resend.push_back(&a);
    else if (auto e = refusal(status, r.text(i, 2), r.text(i, 4), a.t, a.expected_rev, a.fence ? &*a.fence : nullptr))
      answer(a, *e);
    else
      answer(a, store_error{"internal", "troupe_append_batch answered " + status + " for thread " + a.t.id()});
  }
  return 1 + one_by_one(resend);
}

std::vector<std::string> postgres_store::list() {
  lease l(*pool_);
  std::vector<std::string> out;
  if (!l) return out;
  result r = run(l.get(), "SELECT id FROM threads ORDER BY id");
  for (int i = 0; r.ok() && i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

bool postgres_store::remove(const std::string& thread_id) {
  lease l(*pool_);
  if (!l) return false;
  // One statement, so one transaction: entries, the owning conversation and the thread.
  result r = run(l.get(),
                 "WITH e AS (DELETE FROM entries WHERE thread_id = $1), "
                 "c AS (DELETE FROM conversations WHERE thread_id = $1) "
                 "DELETE FROM threads WHERE id = $1",
                 {thread_id});
  return r.ok() && r.affected() != "0";
}

namespace {

// The lease in troupe_take_lease(s)' row `row` (holder, held_epoch,
// held_until from column `col` + 1 on).
thread_lease held_lease(const result& r, int row, int col) {
  return thread_lease{r.text(row, col + 1), static_cast<std::uint64_t>(r.int64(row, col + 2)), r.int64(row, col + 3)};
}

// A lease take's answer from troupe_take_lease(s)' row `row` (status from
// column `col` on): the lease, or lease_taken's error naming the live
// holder; nothing when the server found the holder's lease live but its
// holder is a process of this host that has died (lease_holder.hpp), which
// only this side can tell: the caller takes it over (take_over).
std::optional<stored<thread_lease>> lease_answer(const result& r, int row, int col, const std::string& thread_id,
                                                 const std::string& owner, std::int64_t now_ms,
                                                 std::chrono::milliseconds ttl) {
  const thread_lease held = held_lease(r, row, col);
  if (r.text(row, col) != "owned") return held;
  if (auto refused = lease_taken(held, thread_id, owner, now_ms, ttl); !refused) return refused.error();
  return std::nullopt;
}

// Takes `held` over for `owner`, with the next epoch, if it is still the
// thread's lease; nothing if it changed hands meanwhile.
std::optional<stored<thread_lease>> take_over(PGconn* c, const std::string& thread_id, const std::string& owner,
                                              const thread_lease& held, std::int64_t until) {
  result r = run(c,
                 "UPDATE leases SET owner = $2, epoch = epoch + 1, expires_at = $5 "
                 "WHERE thread_id = $1 AND owner = $3 AND epoch = $4 RETURNING epoch",
                 {thread_id, owner, held.owner, std::to_string(held.epoch), std::to_string(until)});
  if (!r.ok()) return r.error(c, "lease " + thread_id);
  if (r.rows() == 0) return std::nullopt;
  return thread_lease{owner, static_cast<std::uint64_t>(r.int64(0, 0)), until};
}

}  // namespace

stored<thread_lease> postgres_store::acquire_lease(const std::string& thread_id, const std::string& owner,
                                                   std::int64_t now_ms, std::chrono::milliseconds ttl) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  // One round trip: the function locks the lease row, and takes it unless
  // another owner's lease is live (lease_taken's rule; its error is made
  // here). A second when the holder has died: the take-over; and another
  // try if the lease changed hands in between.
  for (int attempt = 0; attempt < 2; ++attempt) {
    result r = run(c, "SELECT status, holder, held_epoch, held_until FROM troupe_take_lease($1, $2, $3, $4)",
                   {thread_id, owner, std::to_string(now_ms), std::to_string(now_ms + ttl.count())});
    if (!r.ok()) return r.error(c, "lease " + thread_id);
    if (auto answer = lease_answer(r, 0, 0, thread_id, owner, now_ms, ttl)) return std::move(*answer);
    if (auto taken = take_over(c, thread_id, owner, held_lease(r, 0, 0), now_ms + ttl.count()))
      return std::move(*taken);
  }
  return store_error{"owned", "thread " + thread_id + " changed hands while its dead holder's lease was taken over"};
}

void postgres_store::acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                          std::chrono::milliseconds ttl, lease_done done) {
  leases_->submit(postgres::queued_take{thread_id, owner, now_ms, ttl, std::move(done), {}});
}

std::size_t postgres_store::take_lease_batch(std::vector<postgres::queued_take>& batch) {
  for (postgres::queued_take& a : batch) a.now_ms = now_after_wait(a.now_ms, a.queued_at);
  // Each on its own, as acquire_lease() takes it: for a batch of one, and
  // when the batch's call failed as a whole (it took nothing then).
  auto one_by_one = [&] {
    for (postgres::queued_take& a : batch) answer(a, acquire_lease(a.thread_id, a.owner, a.now_ms, a.ttl));
    return batch.size();
  };
  if (batch.size() == 1) return one_by_one();
  const result r = run_batch(
      *pool_, "SELECT ord, status, holder, held_epoch, held_until FROM troupe_take_leases($1::json)", batch,
      [](std::string& out, const postgres::queued_take& a) {
        out += "{\"id\":" + json_text(json::string(a.thread_id)) + ",\"owner\":" + json_text(json::string(a.owner)) +
               ",\"now\":" + std::to_string(a.now_ms) + ",\"until\":" + std::to_string(a.now_ms + a.ttl.count()) + "}";
      });
  if (r.unanswered()) {  // the server is stuck: one by one, each take would wait as long again
    for (postgres::queued_take& a : batch) answer(a, stored<thread_lease>(r.error(nullptr, "lease " + a.thread_id)));
    return 1;
  }
  if (!r.ok() || r.rows() != static_cast<int>(batch.size())) return one_by_one();
  for (int i = 0; i < r.rows(); ++i) {
    postgres::queued_take& a = batch.at(static_cast<std::size_t>(r.int64(i, 0)));
    auto taken = lease_answer(r, i, 1, a.thread_id, a.owner, a.now_ms, a.ttl);
    answer(a, taken ? std::move(*taken) : acquire_lease(a.thread_id, a.owner, a.now_ms, a.ttl));
  }
  return 1;
}

namespace {

// Gives `held` up, if it is still the thread's; a failure leaves it to expire.
void give_up_lease(PGconn* c, const std::string& thread_id, const thread_lease& held) {
  run(c, "UPDATE leases SET expires_at = 0 WHERE thread_id = $1 AND owner = $2 AND epoch = $3",
      {thread_id, held.owner, std::to_string(held.epoch)});
}

}  // namespace

void postgres_store::release_lease(const std::string& thread_id, const thread_lease& held) {
  lease l(*pool_);
  if (!l) return;  // a lease not given up expires all the same
  give_up_lease(l.get(), thread_id, held);
}

void postgres_store::release_lease_queued(const std::string& thread_id, const thread_lease& held,
                                          std::function<void()> done) {
  releases_->submit(postgres::queued_release{thread_id,
                                             held,
                                             [done = std::move(done)](std::optional<store_error>) {
                                               if (done) done();
                                             },
                                             {}});
}

std::size_t postgres_store::release_lease_batch(std::vector<postgres::queued_release>& batch) {
  // Each on its own, as release_lease() gives it up: for a batch of one,
  // and when the batch's call failed as a whole (it gave nothing up then).
  // On one connection, and none if none can be had: with the server out of
  // reach, a connection per release would wait out connect_timeout each.
  auto one_by_one = [&] {
    lease l(*pool_);
    for (postgres::queued_release& a : batch) {
      if (l) give_up_lease(l.get(), a.thread_id, a.held);
      answer(a, std::optional<store_error>());
    }
    return batch.size();
  };
  if (batch.size() == 1) return one_by_one();
  const result r = run_batch(*pool_, "SELECT troupe_release_leases($1::json)", batch,
                             [](std::string& out, const postgres::queued_release& a) {
                               out += "{\"id\":" + json_text(json::string(a.thread_id)) +
                                      ",\"owner\":" + json_text(json::string(a.held.owner)) +
                                      ",\"epoch\":" + std::to_string(a.held.epoch) + "}";
                             });
  // Not one by one when the server is stuck: each would wait as long again.
  if (!r.ok() && !r.unanswered()) return one_by_one();
  for (postgres::queued_release& a : batch) answer(a, std::optional<store_error>());
  return 1;
}

}  // namespace troupe
