// The thread_store part of the SQLite store.

#include "runtime/store/sqlite/sqlite_store.hpp"

#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/store/sqlite/detail/connection.hpp"
#include "runtime/store/sqlite/detail/reader_pool.hpp"
#include "runtime/store/sqlite/detail/rows.hpp"

namespace troupe {

namespace json = boost::json;
using sqlite::connection;
using sqlite::statement;

namespace {

// An entry as its row: serialised before the commit queues, so that the
// writer's transaction does no JSON work.
struct entry_row {
  const entry* e;
  std::string payload;
  std::string refs;
};

std::vector<entry_row> rows_of(entry_range entries) {
  std::vector<entry_row> rows;
  rows.reserve(entries.size());
  for (const entry& e : entries) rows.push_back({&e, json_text(e.payload), json_text(e.refs)});
  return rows;
}

}  // namespace

stored<thread> sqlite_store::load(const std::string& thread_id) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  connection& c = *r;
  if (!r.begin()) return c.io_error("load " + thread_id);
  statement head(c, "SELECT rev, created_at, updated_at, metadata FROM threads WHERE id = ?");
  if (!head) return c.io_error("load " + thread_id);
  head.bind(1, thread_id);
  const int rc = head.step();
  if (rc == SQLITE_DONE) return store_error{"not_found", "no thread " + thread_id};
  if (rc != SQLITE_ROW) return c.io_error("load " + thread_id);

  std::size_t repaired = 0;
  json::value metadata = sqlite::parse_stored(head.text(3), repaired);
  if (!metadata.is_object())
    return store_error{"corrupt", "thread " + thread_id + ": its metadata is not a JSON object"};

  statement rows(c, std::string("SELECT ") + sqlite::entry_columns + " FROM entries WHERE thread_id = ? ORDER BY seq");
  if (!rows) return c.io_error("load " + thread_id);
  rows.bind(1, thread_id);
  std::vector<entry> entries;
  int step;
  while ((step = rows.step()) == SQLITE_ROW) {
    auto e = sqlite::read_entry(rows, thread_id, repaired);
    if (!e) return e.error();
    entries.push_back(std::move(*e));
  }
  if (step != SQLITE_DONE) return c.io_error("load " + thread_id);
  if (repaired) report_repair(thread_id, sqlite::repaired_texts(repaired));
  auto t = thread::restore(thread_id, static_cast<std::uint64_t>(head.int64(0)), head.int64(1), head.int64(2),
                           std::move(metadata.as_object()), std::move(entries));
  if (!t) return store_error{"corrupt", "thread " + thread_id + ": " + t.error().describe()};
  return std::move(*t);
}

stored<std::vector<entry>> sqlite_store::request_entries(const std::string& thread_id, const std::string& request_id) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  connection& c = *r;
  const std::string what = "read request " + request_id + " of " + thread_id;
  // The expression is entries_by_request's (migrations.cpp).
  statement s(c, std::string("SELECT ") + sqlite::entry_columns +
                     " FROM entries WHERE thread_id = ? AND json_extract(refs, '$.request_id') = ? ORDER BY seq");
  if (!s) return c.io_error(what);
  s.bind(1, thread_id);
  s.bind(2, request_id);
  std::vector<entry> out;
  std::size_t repaired = 0;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    auto e = sqlite::read_entry(s, thread_id, repaired);
    if (!e) return e.error();
    out.push_back(std::move(*e));
  }
  if (rc != SQLITE_DONE) return c.io_error(what);
  if (repaired) report_repair(thread_id, sqlite::repaired_texts(repaired));
  return out;
}

stored<std::vector<open_pause>> sqlite_store::open_pauses(const std::string& agent_id) {
  sqlite::reader_pool::reader r(*readers_);
  if (!r) return r.failure();
  connection& c = *r;
  const std::string what = "read the open approval requests of agent " + agent_id;
  // The expressions are entries_approvals' and entries_by_request's (migrations.cpp).
  statement s(c,
              "SELECT a.thread_id, json_extract(a.refs, '$.request_id'), json_extract(a.refs, '$.tool_call_id'), "
              "json_extract(a.payload, '$.expires_at') FROM entries a "
              "WHERE a.kind = 'approval_request' AND json_extract(a.payload, '$.agent') = ? AND NOT EXISTS ("
              "SELECT 1 FROM entries d WHERE d.thread_id = a.thread_id "
              "AND json_extract(d.refs, '$.request_id') = json_extract(a.refs, '$.request_id') "
              "AND d.kind IN ('decision', 'tool_result') "
              "AND json_extract(d.refs, '$.tool_call_id') = json_extract(a.refs, '$.tool_call_id')) "
              "ORDER BY a.thread_id, a.seq");
  if (!s) return c.io_error(what);
  s.bind(1, agent_id);
  std::vector<open_pause> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(open_pause{s.text(0), s.text(1), s.text(2), s.int64(3)});
  if (rc != SQLITE_DONE) return c.io_error(what);
  return out;
}

namespace {

// The thread's lease as the writer's transaction sees it; none if never
// leased. Reading it inside the transaction is what makes the fence hold.
stored<std::optional<thread_lease>> lease_in(connection& c, const std::string& thread_id) {
  statement s(c, "SELECT owner, epoch, expires_at FROM leases WHERE thread_id = ?");
  if (!s) return c.io_error("read the lease of " + thread_id);
  s.bind(1, thread_id);
  const int rc = s.step();
  if (rc == SQLITE_DONE) return std::optional<thread_lease>();
  if (rc != SQLITE_ROW) return c.io_error("read the lease of " + thread_id);
  return std::optional<thread_lease>(thread_lease{s.text(0), static_cast<std::uint64_t>(s.int64(1)), s.int64(2)});
}

std::optional<store_error> write_lease(connection& c, const std::string& thread_id, const thread_lease& l) {
  statement s(c,
              "INSERT INTO leases (thread_id, owner, epoch, expires_at) VALUES (?, ?, ?, ?) "
              "ON CONFLICT(thread_id) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, "
              "expires_at = excluded.expires_at");
  if (!s) return c.io_error("write the lease of " + thread_id);
  s.bind(1, thread_id);
  s.bind(2, l.owner);
  s.bind(3, static_cast<std::int64_t>(l.epoch));
  s.bind(4, l.expires_at_ms);
  if (s.step() != SQLITE_DONE) return c.io_error("write the lease of " + thread_id);
  return std::nullopt;
}

// A commit of `t` as the writer runs it: everything it needs, serialised
// before it queues (the writer's transaction does only SQL), and owned, so
// that it can wait in the queue after its caller has gone on.
struct append_job {
  thread_view t;
  std::uint64_t expected_rev;
  std::optional<thread_lease> fence;
  std::size_t first_new;
  std::vector<entry_row> rows;
  conversation_touch touch;
  std::string metadata;

  append_job(thread_view view, std::uint64_t expected, const thread_lease* lease)
      : t(std::move(view)), expected_rev(expected), fence(lease ? std::optional<thread_lease>(*lease) : std::nullopt) {
    // rev grows by one per entry, so the writer's new entries are its last
    // (rev - expected_rev); serialise those outside the transaction. The
    // stored size is checked inside it all the same.
    const std::uint64_t grown = t.rev() >= expected_rev ? t.rev() - expected_rev : 0;
    first_new = grown <= t.size() ? t.size() - grown : 0;
    rows = rows_of(t.slice(first_new, t.size()));
    touch = touch_from(t.slice(first_new, t.size()));
    metadata = json_text(t.metadata());
  }

  std::optional<store_error> operator()(connection& c) {
    auto failed = [&] { return c.io_error("append to " + t.id()); };
    // Every check first, in one statement (the stored rev and size, and the
    // lease), and only then the writes: a commit refused here has written
    // nothing, so the group commit need not undo it (group_commit.hpp).
    std::uint64_t stored_rev = 0, stored_size = 0;
    std::optional<std::int64_t> row;  // the thread's row, when it has one
    std::optional<thread_lease> current;
    {
      statement s(c,
                  "SELECT t.rev, t.size, l.owner, l.epoch, l.expires_at, t.rowid FROM (SELECT ?1 AS id) AS k "
                  "LEFT JOIN threads AS t ON t.id = k.id LEFT JOIN leases AS l ON l.thread_id = k.id");
      if (!s) return failed();
      s.bind(1, t.id());
      if (s.step() != SQLITE_ROW) return failed();
      if (!s.null(0)) {
        stored_rev = static_cast<std::uint64_t>(s.int64(0));
        stored_size = static_cast<std::uint64_t>(s.int64(1));
        row = s.int64(5);
      }
      if (!s.null(2)) current = thread_lease{s.text(2), static_cast<std::uint64_t>(s.int64(3)), s.int64(4)};
    }
    if (fence)
      if (auto refused = fence_refusal(current, t.id(), *fence)) return refused;
    if (stored_rev != expected_rev)
      return store_error{"conflict", "thread " + t.id() + " is at rev " + std::to_string(stored_rev) + ", not " +
                                         std::to_string(expected_rev)};
    if (t.size() < stored_size)
      return store_error{"conflict", "thread " + t.id() + " has fewer entries than the stored one"};
    if (stored_size != first_new) rows = rows_of(t.slice(stored_size, t.size()));  // a thread restored with rev > size

    if (fence) {
      const thread_lease renewed = lease_renewed(*current, *fence);
      if (renewed.expires_at_ms != current->expires_at_ms)
        if (auto e = write_lease(c, t.id(), renewed)) return e;
    }
    statement ins(c, "INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs) VALUES (?, ?, ?, ?, ?, ?, ?)");
    if (!ins) return failed();
    for (const entry_row& row : rows) {
      ins.bind(1, t.id());
      ins.bind(2, static_cast<std::int64_t>(row.e->seq));
      ins.bind(3, row.e->id);
      ins.bind(4, row.e->at);
      ins.bind(5, row.e->kind);
      ins.bind(6, row.payload);
      ins.bind(7, row.refs);
      if (ins.step() != SQLITE_DONE) return failed();
      ins.reset();
    }
    // An existing thread's row is updated by its rowid, found by the check
    // above: no second search of the id index.
    if (row) {
      statement up(c, "UPDATE threads SET rev = ?, size = ?, updated_at = ?, metadata = ? WHERE rowid = ?");
      if (!up) return failed();
      up.bind(1, static_cast<std::int64_t>(t.rev()));
      up.bind(2, static_cast<std::int64_t>(t.size()));
      up.bind(3, t.updated_at());
      up.bind(4, metadata);
      up.bind(5, *row);
      if (up.step() != SQLITE_DONE) return failed();
    } else {
      statement in(c,
                   "INSERT INTO threads (id, rev, size, created_at, updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?)");
      if (!in) return failed();
      in.bind(1, t.id());
      in.bind(2, static_cast<std::int64_t>(t.rev()));
      in.bind(3, static_cast<std::int64_t>(t.size()));
      in.bind(4, t.created_at());
      in.bind(5, t.updated_at());
      in.bind(6, metadata);
      if (in.step() != SQLITE_DONE) return failed();
    }

    if (touch.last_message_at || touch.title) {
      statement conv(c,
                     "UPDATE conversations SET last_message_at = max(last_message_at, ?1), "
                     "title = CASE WHEN title = '' THEN ?2 ELSE title END, updated_at = ?3 WHERE thread_id = ?4");
      if (!conv) return failed();
      conv.bind(1, touch.last_message_at.value_or(0));
      conv.bind(2, touch.title.value_or(""));
      conv.bind(3, wall_clock_ms());
      conv.bind(4, t.id());
      if (conv.step() != SQLITE_DONE) return failed();
    }
    return std::nullopt;
  }
};

}  // namespace

stored<std::uint64_t> sqlite_store::append(const thread_view& t, std::uint64_t expected_rev) {
  append_job job(t, expected_rev, nullptr);
  const sqlite::write_work work = [&job](connection& c) { return job(c); };
  if (auto e = write(work)) return *e;
  return t.rev();
}

stored<std::uint64_t> sqlite_store::append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                                  const thread_lease& fence) {
  append_job job(t, expected_rev, &fence);
  const sqlite::write_work work = [&job](connection& c) { return job(c); };
  if (auto e = write(work)) return *e;
  return t.rev();
}

void sqlite_store::append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence,
                                 append_done done) {
  const std::uint64_t rev = t.rev();
  std::shared_ptr<append_job> job;
  try {
    job = std::make_shared<append_job>(std::move(t), expected_rev, fence);
  } catch (const std::exception& e) {
    done(store_error{"internal", std::string("the commit could not be prepared: ") + e.what()});
    return;
  }
  commits_.submit([job](connection& c) { return (*job)(c); },
                  [rev, done = std::move(done)](std::optional<store_error> e) {
                    done(e ? stored<std::uint64_t>(*e) : stored<std::uint64_t>(rev));
                  });
}

std::vector<std::string> sqlite_store::list() {
  sqlite::reader_pool::reader r(*readers_);
  std::vector<std::string> out;
  if (!r) return out;  // list() has no error to give, as in the other stores
  statement s(*r, "SELECT id FROM threads ORDER BY id");
  while (s && s.step() == SQLITE_ROW) out.push_back(s.text(0));
  return out;
}

bool sqlite_store::remove(const std::string& thread_id) {
  bool existed = false;
  const auto e = write([&](connection& c) { return sqlite::delete_thread(c, thread_id, existed); });
  return !e && existed;
}

namespace {

// Takes the lease in the writer's transaction; `out` gets the lease, or
// why it was refused.
std::optional<store_error> take_lease(connection& c, const std::string& thread_id, const std::string& owner,
                                      std::int64_t now_ms, std::chrono::milliseconds ttl,
                                      std::optional<stored<thread_lease>>& out) {
  auto current = lease_in(c, thread_id);
  if (!current) return current.error();
  out = lease_taken(*current, thread_id, owner, now_ms, ttl);
  if (!*out) return std::nullopt;  // refused: nothing to write
  return write_lease(c, thread_id, **out);
}

}  // namespace

stored<thread_lease> sqlite_store::acquire_lease(const std::string& thread_id, const std::string& owner,
                                                 std::int64_t now_ms, std::chrono::milliseconds ttl) {
  std::optional<stored<thread_lease>> out;
  const sqlite::write_work work = [&](connection& c) { return take_lease(c, thread_id, owner, now_ms, ttl, out); };
  if (auto e = write(work)) return *e;
  return std::move(*out);
}

void sqlite_store::acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                        std::chrono::milliseconds ttl, lease_done done) {
  auto out = std::make_shared<std::optional<stored<thread_lease>>>();
  const auto queued_at = std::chrono::steady_clock::now();
  commits_.submit(
      [=](connection& c) { return take_lease(c, thread_id, owner, now_after_wait(now_ms, queued_at), ttl, *out); },
      [out, done = std::move(done)](std::optional<store_error> e) {
        done(e ? stored<thread_lease>(*e) : std::move(**out));
      });
}

namespace {

// Gives `held` up in the writer's transaction, if it is still the thread's.
std::optional<store_error> give_up_lease(connection& c, const std::string& thread_id, const thread_lease& held) {
  auto current = lease_in(c, thread_id);
  if (!current) return current.error();
  if (!*current) return std::nullopt;
  return write_lease(c, thread_id, lease_released(**current, held));
}

}  // namespace

void sqlite_store::release_lease(const std::string& thread_id, const thread_lease& held) {
  const sqlite::write_work work = [&](connection& c) { return give_up_lease(c, thread_id, held); };
  write(work);  // a lease not given up expires all the same
}

void sqlite_store::release_lease_queued(const std::string& thread_id, const thread_lease& held,
                                        std::function<void()> done) {
  commits_.submit([thread_id, held](connection& c) { return give_up_lease(c, thread_id, held); },
                  [done = std::move(done)](std::optional<store_error>) {
                    if (done) done();
                  });
}

}  // namespace troupe
