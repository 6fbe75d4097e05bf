// The thread_store part of the PostgreSQL store.

#include "runtime/store/postgres/postgres_store.hpp"

#include "runtime/clock.hpp"
#include "runtime/store/postgres/connection_pool.hpp"
#include "runtime/store/postgres/rows.hpp"
#include "signals/json_text.hpp"

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
    out += "{\"seq\":" + std::to_string(e.seq) + ",\"id\":" + json_text(json::string(e.id.view())) +
           ",\"at\":" + std::to_string(e.at) + ",\"kind\":" + json_text(json::string(e.kind.view())) +
           ",\"payload\":" + json_text(json::string(json_text(e.payload))) +
           ",\"refs\":" + json_text(json::string(json_text(e.refs))) + "}";
  }
  return out + "]";
}

}  // namespace

stored<thread> postgres_store::load(const std::string& thread_id) {
  return pool_->read([&](PGconn* c) -> stored<thread> {
    const std::string what = "load " + thread_id;
    // One snapshot for the head and the entries.
    result begin = run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!begin.ok()) return begin.error(c, what);
    result head = run(c, "SELECT rev, created_at, updated_at, metadata::text FROM threads WHERE id = $1", {thread_id});
    if (!head.ok()) return head.error(c, what);
    if (head.rows() == 0) return store_error{"not_found", "no thread " + thread_id};
    auto metadata = parse_object(head.text(0, 3), "thread " + thread_id + " metadata");
    if (!metadata) return metadata.error();
    const std::string sql = std::string("SELECT ") + entry_columns + " FROM entries WHERE thread_id = $1 ORDER BY seq";
    result rows = run(c, sql.c_str(), {thread_id});
    if (!rows.ok()) return rows.error(c, what);
    run(c, "COMMIT");
    std::vector<entry> entries;
    entries.reserve(static_cast<std::size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i) {
      auto e = read_entry(rows, i, thread_id);
      if (!e) return e.error();
      entries.push_back(std::move(*e));
    }
    auto t = thread::restore(thread_id, static_cast<std::uint64_t>(head.int64(0, 0)), head.int64(0, 1),
                             head.int64(0, 2), std::move(*metadata), std::move(entries));
    if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
    return std::move(*t);
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
    if (status == "fenced") {
      const std::string holder = r.text(0, 3);
      return *fence_refusal(holder.empty() ? std::nullopt
                                           : std::optional<thread_lease>(
                                                 thread_lease{holder, static_cast<std::uint64_t>(r.int64(0, 1)), 0}),
                            t.id(), *fence);
    }
    if (status == "conflict")
      return store_error{"conflict",
                         "thread " + t.id() + " is at rev " + r.text(0, 1) + ", not " + std::to_string(expected_rev)};
    first = static_cast<std::size_t>(r.int64(0, 2));  // resend
  }
  return store_error{"conflict", "thread " + t.id() + " changed while it was being written"};
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

// The lease row of a thread, locked for this transaction; a placeholder row
// (epoch 0, expired) is made first for a thread never leased, so that two
// owners taking it at once queue on the same lock.
stored<std::optional<thread_lease>> locked_lease(PGconn* c, const std::string& thread_id) {
  result made = run(c,
                    "INSERT INTO leases (thread_id, owner, epoch, expires_at) VALUES ($1, '', 0, 0) "
                    "ON CONFLICT (thread_id) DO NOTHING",
                    {thread_id});
  if (!made.ok()) return made.error(c, "lease " + thread_id);
  result r = run(c, "SELECT owner, epoch, expires_at FROM leases WHERE thread_id = $1 FOR UPDATE", {thread_id});
  if (!r.ok()) return r.error(c, "lease " + thread_id);
  if (r.rows() == 0 || r.int64(0, 1) == 0) return std::optional<thread_lease>();
  return std::optional<thread_lease>(
      thread_lease{r.text(0, 0), static_cast<std::uint64_t>(r.int64(0, 1)), r.int64(0, 2)});
}

// Runs `body` in a transaction of its own on `c`: committed if it returns
// no error, rolled back otherwise.
template <class Body>
std::optional<store_error> in_transaction(PGconn* c, const std::string& what, Body&& body) {
  if (result b = run(c, "BEGIN"); !b.ok()) return b.error(c, what);
  std::optional<store_error> e = body();
  if (!e) {
    result done = run(c, "COMMIT");
    if (done.ok()) return std::nullopt;
    e = done.error(c, what);
  }
  run(c, "ROLLBACK");
  return e;
}

}  // namespace

stored<thread_lease> postgres_store::acquire_lease(const std::string& thread_id, const std::string& owner,
                                                   std::int64_t now_ms, std::chrono::milliseconds ttl) {
  lease l(*pool_);
  if (!l) return l.failure();
  PGconn* c = l.get();
  std::optional<stored<thread_lease>> out;
  auto e = in_transaction(c, "lease " + thread_id, [&]() -> std::optional<store_error> {
    auto current = locked_lease(c, thread_id);
    if (!current) return current.error();
    out = lease_taken(*current, thread_id, owner, now_ms, ttl);
    if (!*out) return (*out).error();  // refused: nothing to keep
    result w = run(c, "UPDATE leases SET owner = $2, epoch = $3, expires_at = $4 WHERE thread_id = $1",
                   {thread_id, (*out)->owner, std::to_string((*out)->epoch), std::to_string((*out)->expires_at_ms)});
    if (!w.ok()) return w.error(c, "lease " + thread_id);
    return std::nullopt;
  });
  if (out && !*out) return std::move(*out);
  if (e) return *e;
  return std::move(*out);
}

void postgres_store::release_lease(const std::string& thread_id, const thread_lease& held) {
  lease l(*pool_);
  if (!l) return;  // a lease not given up expires all the same
  run(l.get(), "UPDATE leases SET expires_at = 0 WHERE thread_id = $1 AND owner = $2 AND epoch = $3",
      {thread_id, held.owner, std::to_string(held.epoch)});
}

}  // namespace troupe
