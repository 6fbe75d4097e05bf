#include "runtime/store/postgres/detail/migrations.hpp"

#include "runtime/store/postgres/detail/result.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace troupe::postgres {

namespace {

// Each migration takes the database from the version before it to its own.
constexpr const char* migrations[] = {
    R"(
  CREATE TABLE threads (
    id text PRIMARY KEY,
    rev bigint NOT NULL,
    size bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    metadata json NOT NULL
  );
  CREATE TABLE entries (
    thread_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    at bigint NOT NULL,
    kind text NOT NULL,
    payload json NOT NULL,
    refs json NOT NULL,
    PRIMARY KEY (thread_id, seq)
  );
  CREATE INDEX entries_messages ON entries (thread_id, seq) WHERE kind = 'message';
  CREATE TABLE conversations (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    platform text NOT NULL,
    platform_identifier text NOT NULL,
    thread_id text NOT NULL UNIQUE,
    title text NOT NULL,
    metadata json NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    last_message_at bigint NOT NULL,
    archived boolean NOT NULL
  );
  CREATE UNIQUE INDEX conversations_active_key
    ON conversations (user_id, platform, platform_identifier) WHERE NOT archived;
  CREATE INDEX conversations_by_recency
    ON conversations (user_id, last_message_at DESC, created_at DESC) WHERE NOT archived;

  -- One commit in one round trip. Locks the thread's row only. Returns
  -- 'ok'; 'conflict' with the stored rev; or 'resend' with the stored size
  -- when the caller sent entries from the wrong seq.
  CREATE FUNCTION troupe_append(p_id text, p_expected bigint, p_rev bigint, p_size bigint, p_created bigint,
                                p_updated bigint, p_metadata json, p_first bigint, p_entries json,
                                p_last_message_at bigint, p_title text, p_now bigint)
  RETURNS TABLE (status text, stored_rev bigint, stored_size bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    cur_rev bigint;
    cur_size bigint;
  BEGIN
    SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
      IF p_expected <> 0 THEN
        RETURN QUERY SELECT 'conflict'::text, 0::bigint, 0::bigint;
        RETURN;
      END IF;
      INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
        VALUES (p_id, 0, 0, p_created, p_updated, p_metadata) ON CONFLICT (id) DO NOTHING;
      SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    END IF;
    IF cur_rev <> p_expected OR p_size < cur_size THEN
      RETURN QUERY SELECT 'conflict'::text, cur_rev, cur_size;
      RETURN;
    END IF;
    IF cur_size <> p_first THEN
      RETURN QUERY SELECT 'resend'::text, cur_rev, cur_size;
      RETURN;
    END IF;
    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT p_id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM json_to_recordset(p_entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text);
    UPDATE threads t SET rev = p_rev, size = p_size, updated_at = p_updated, metadata = p_metadata
      WHERE t.id = p_id;
    IF p_last_message_at IS NOT NULL OR p_title IS NOT NULL THEN
      UPDATE conversations c
        SET last_message_at = GREATEST(c.last_message_at, COALESCE(p_last_message_at, 0)),
            title = CASE WHEN c.title = '' AND p_title IS NOT NULL THEN p_title ELSE c.title END,
            updated_at = p_now
        WHERE c.thread_id = p_id;
    END IF;
    RETURN QUERY SELECT 'ok'::text, p_rev, p_size;
  END
  $$;
)",
    // 2: leases (thread_lease.hpp). A commit may carry its writer's lease:
    // then it goes in only if that is the thread's current lease, checked
    // under the lease row's lock in the commit's own transaction, and it
    // renews it. Taking and giving up a lease are done by the client, with
    // the same row lock.
    R"(
  CREATE TABLE leases (
    thread_id text PRIMARY KEY,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  DROP FUNCTION troupe_append(text, bigint, bigint, bigint, bigint, bigint, json, bigint, json, bigint, text, bigint);
  CREATE FUNCTION troupe_append(p_id text, p_expected bigint, p_rev bigint, p_size bigint, p_created bigint,
                                p_updated bigint, p_metadata json, p_first bigint, p_entries json,
                                p_last_message_at bigint, p_title text, p_now bigint,
                                p_owner text, p_epoch bigint, p_lease_until bigint)
  RETURNS TABLE (status text, stored_rev bigint, stored_size bigint, holder text)
  LANGUAGE plpgsql AS $$
  DECLARE
    cur_rev bigint;
    cur_size bigint;
    cur_owner text;
    cur_epoch bigint;
  BEGIN
    IF p_owner IS NOT NULL THEN
      SELECT l.owner, l.epoch INTO cur_owner, cur_epoch FROM leases l WHERE l.thread_id = p_id FOR UPDATE;
      IF NOT FOUND OR cur_owner <> p_owner OR cur_epoch <> p_epoch THEN
        RETURN QUERY SELECT 'fenced'::text, COALESCE(cur_epoch, 0), 0::bigint, COALESCE(cur_owner, '');
        RETURN;
      END IF;
    END IF;
    SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
      IF p_expected <> 0 THEN
        RETURN QUERY SELECT 'conflict'::text, 0::bigint, 0::bigint, ''::text;
        RETURN;
      END IF;
      INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
        VALUES (p_id, 0, 0, p_created, p_updated, p_metadata) ON CONFLICT (id) DO NOTHING;
      SELECT t.rev, t.size INTO cur_rev, cur_size FROM threads t WHERE t.id = p_id FOR UPDATE;
    END IF;
    IF cur_rev <> p_expected OR p_size < cur_size THEN
      RETURN QUERY SELECT 'conflict'::text, cur_rev, cur_size, ''::text;
      RETURN;
    END IF;
    IF cur_size <> p_first THEN
      RETURN QUERY SELECT 'resend'::text, cur_rev, cur_size, ''::text;
      RETURN;
    END IF;
    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT p_id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM json_to_recordset(p_entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text);
    UPDATE threads t SET rev = p_rev, size = p_size, updated_at = p_updated, metadata = p_metadata
      WHERE t.id = p_id;
    IF p_last_message_at IS NOT NULL OR p_title IS NOT NULL THEN
      UPDATE conversations c
        SET last_message_at = GREATEST(c.last_message_at, COALESCE(p_last_message_at, 0)),
            title = CASE WHEN c.title = '' AND p_title IS NOT NULL THEN p_title ELSE c.title END,
            updated_at = p_now
        WHERE c.thread_id = p_id;
    END IF;
    IF p_owner IS NOT NULL THEN
      UPDATE leases l SET expires_at = GREATEST(l.expires_at, p_lease_until) WHERE l.thread_id = p_id;
    END IF;
    RETURN QUERY SELECT 'ok'::text, p_rev, p_size, ''::text;
  END
  $$;
)",
    // 3: many commits in one call (postgres::append_queue): troupe_append for
    // each, in order, in the call's one transaction. A commit refused
    // (fenced, conflict, resend) has written nothing that matters and the
    // others go on; an error aborts the call, and the client then runs each
    // commit on its own. Also a lease taken in one call; the rules are
    // those of lease_taken (thread_lease.hpp): 'owned' with the live
    // holder, or 'taken' with the new lease.
    R"(
  CREATE FUNCTION troupe_append_batch(p_commits json)
  RETURNS TABLE (ord integer, status text, stored_rev bigint, stored_size bigint, holder text)
  LANGUAGE plpgsql AS $$
  DECLARE
    c record;
    r record;
    i integer := 0;
  BEGIN
    FOR c IN SELECT * FROM json_to_recordset(p_commits) AS x(
        id text, expected bigint, rev bigint, size bigint, created bigint, updated bigint, metadata json,
        first bigint, entries json, last_message_at bigint, title text, now bigint, owner text, epoch bigint,
        lease_until bigint) LOOP
      SELECT * INTO r FROM troupe_append(c.id, c.expected, c.rev, c.size, c.created, c.updated, c.metadata,
                                         c.first, c.entries, c.last_message_at, c.title, c.now, c.owner, c.epoch,
                                         c.lease_until);
      ord := i;
      status := r.status;
      stored_rev := r.stored_rev;
      stored_size := r.stored_size;
      holder := r.holder;
      RETURN NEXT;
      i := i + 1;
    END LOOP;
  END
  $$;
  CREATE FUNCTION troupe_take_lease(p_id text, p_owner text, p_now bigint, p_until bigint)
  RETURNS TABLE (status text, holder text, held_epoch bigint, held_until bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    cur leases%ROWTYPE;
  BEGIN
    INSERT INTO leases (thread_id, owner, epoch, expires_at) VALUES (p_id, '', 0, 0)
      ON CONFLICT (thread_id) DO NOTHING;
    SELECT * INTO cur FROM leases l WHERE l.thread_id = p_id FOR UPDATE;
    IF cur.epoch > 0 AND cur.owner <> p_owner AND cur.expires_at > p_now THEN
      RETURN QUERY SELECT 'owned'::text, cur.owner, cur.epoch, cur.expires_at;
      RETURN;
    END IF;
    UPDATE leases l SET owner = p_owner, epoch = cur.epoch + 1, expires_at = p_until WHERE l.thread_id = p_id;
    RETURN QUERY SELECT 'taken'::text, p_owner, cur.epoch + 1, p_until;
  END
  $$;
)",
    // 4: a commit leaves its lease's row alone unless it moves the expiry on
    // (the agent renews at most once a second), so the commits in between
    // make no new version of the row; and conversations get the order they
    // were opened in, which orders two whose last messages share a
    // millisecond.
    R"(
  CREATE TRIGGER leases_unchanged BEFORE UPDATE ON leases
    FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
  ALTER TABLE conversations ADD COLUMN opened bigint GENERATED ALWAYS AS IDENTITY;
  DROP INDEX conversations_by_recency;
  CREATE INDEX conversations_by_recency
    ON conversations (user_id, last_message_at DESC, created_at DESC, opened DESC) WHERE NOT archived;
)",
    // 5: a batch written set by set instead of commit by commit. The loop of
    // version 3 ran troupe_append's seven statements for every commit, and
    // their executor start-up was most of the server's CPU under load (perf
    // of durable_bench: plpgsql a third of the server's samples, its
    // statements' set-up and planning most of that). Now a batch of any
    // size is parsed once and takes a dozen statements: lock the leases,
    // then the threads, each in id order (so two batches cannot wait on each
    // other in a cycle over rows that exist when they start), decide every
    // commit's status from the rows locked, then write the entries, threads,
    // conversations and lease expiries of the commits that go in. The answers are
    // troupe_append's, commit for commit. A batch naming one thread twice
    // (its second commit must see the first) is written by the loop, kept
    // as troupe_append_each. Lease takes at load are batched the same way
    // (troupe_take_leases), instead of a call each.
    R"(
  CREATE TYPE troupe_commit AS (
    ord integer, id text, expected bigint, rev bigint, size bigint, created bigint, updated bigint, metadata json,
    first bigint, entries json, last_message_at bigint, title text, now bigint, owner text, epoch bigint,
    lease_until bigint
  );
  ALTER FUNCTION troupe_append_batch(json) RENAME TO troupe_append_each;
  CREATE FUNCTION troupe_append_batch(p_commits json)
  RETURNS TABLE (ord integer, status text, stored_rev bigint, stored_size bigint, holder text)
  LANGUAGE plpgsql AS $$
  DECLARE
    cs troupe_commit[];
    locked_leases text[];
    locked_threads text[];
    fenced boolean[];
    ok boolean[];
    a_ord integer[];
    a_status text[];
    a_rev bigint[];
    a_size bigint[];
    a_holder text[];
  BEGIN
    cs := ARRAY(
      SELECT ROW((x.n - 1)::integer, x.id, x.expected, x.rev, x.size, x.created, x.updated, x.metadata, x.first,
                 x.entries, x.last_message_at, x.title, x.now, x.owner, x.epoch, x.lease_until)::troupe_commit
      FROM ROWS FROM (json_to_recordset(p_commits) AS (
          id text, expected bigint, rev bigint, size bigint, created bigint, updated bigint, metadata json,
          first bigint, entries json, last_message_at bigint, title text, now bigint, owner text, epoch bigint,
          lease_until bigint)) WITH ORDINALITY
        AS x(id, expected, rev, size, created, updated, metadata, first, entries, last_message_at, title, now,
             owner, epoch, lease_until, n)
      ORDER BY x.n);
    -- Locks first, the leases then the threads, each in id order, whichever
    -- way the batch is written. Only rows locked here are read after: a row
    -- another transaction commits in between is not this batch's to judge,
    -- as troupe_append's one SELECT ... FOR UPDATE would not have seen it.
    locked_leases := ARRAY(
      SELECT l.thread_id FROM leases l
      WHERE l.thread_id IN (SELECT c.id FROM unnest(cs) c WHERE c.owner IS NOT NULL)
      ORDER BY l.thread_id FOR UPDATE);
    IF (SELECT count(DISTINCT c.id) FROM unnest(cs) c) <> cardinality(cs) THEN
      PERFORM 1 FROM threads t WHERE t.id IN (SELECT c.id FROM unnest(cs) c) ORDER BY t.id FOR UPDATE;
      RETURN QUERY SELECT * FROM troupe_append_each(p_commits);
      RETURN;
    END IF;
    fenced := ARRAY(
      SELECT c.owner IS NOT NULL AND (l.thread_id IS NULL OR l.owner <> c.owner OR l.epoch <> c.epoch)
      FROM unnest(cs) c
      LEFT JOIN (leases l JOIN unnest(locked_leases) AS ll(id) ON ll.id = l.thread_id) ON l.thread_id = c.id
      ORDER BY c.ord);

    INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
      SELECT c.id, 0, 0, c.created, c.updated, c.metadata FROM unnest(cs) c
      WHERE c.expected = 0 AND NOT fenced[c.ord + 1] ORDER BY c.id
      ON CONFLICT (id) DO NOTHING;
    locked_threads := ARRAY(
      SELECT t.id FROM threads t
      WHERE t.id IN (SELECT c.id FROM unnest(cs) c WHERE NOT fenced[c.ord + 1])
      ORDER BY t.id FOR UPDATE);

    SELECT array_agg(s.ord ORDER BY s.ord), array_agg(s.status ORDER BY s.ord), array_agg(s.stored_rev ORDER BY s.ord),
           array_agg(s.stored_size ORDER BY s.ord), array_agg(s.holder ORDER BY s.ord)
      INTO a_ord, a_status, a_rev, a_size, a_holder
      FROM (
        SELECT d.ord, d.status,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.epoch, 0) WHEN 'ok' THEN d.rev
                             ELSE COALESCE(d.cur_rev, 0) END AS stored_rev,
               CASE d.status WHEN 'fenced' THEN 0 WHEN 'ok' THEN d.size ELSE COALESCE(d.cur_size, 0) END AS stored_size,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.owner, '') ELSE '' END AS holder
        FROM (
          SELECT c.ord, c.rev, c.size, t.rev AS cur_rev, t.size AS cur_size, l.epoch, l.owner,
                 CASE WHEN fenced[c.ord + 1] THEN 'fenced'
                      WHEN t.id IS NULL OR t.rev <> c.expected OR c.size < t.size THEN 'conflict'
                      WHEN t.size <> c.first THEN 'resend'
                      ELSE 'ok' END AS status
          FROM unnest(cs) c
          LEFT JOIN (threads t JOIN unnest(locked_threads) AS lt(id) ON lt.id = t.id) ON t.id = c.id
          LEFT JOIN (leases l JOIN unnest(locked_leases) AS ll(id) ON ll.id = l.thread_id) ON l.thread_id = c.id
        ) d
      ) s;
    ok := ARRAY(SELECT x = 'ok' FROM unnest(a_status) x);

    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT c.id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM unnest(cs) c,
           json_to_recordset(c.entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text)
      WHERE ok[c.ord + 1];
    UPDATE threads t SET rev = c.rev, size = c.size, updated_at = c.updated, metadata = c.metadata
      FROM unnest(cs) c WHERE t.id = c.id AND ok[c.ord + 1];
    UPDATE conversations v
      SET last_message_at = GREATEST(v.last_message_at, COALESCE(c.last_message_at, 0)),
          title = CASE WHEN v.title = '' AND c.title IS NOT NULL THEN c.title ELSE v.title END,
          updated_at = c.now
      FROM unnest(cs) c
      WHERE v.thread_id = c.id AND ok[c.ord + 1] AND (c.last_message_at IS NOT NULL OR c.title IS NOT NULL);
    UPDATE leases l SET expires_at = GREATEST(l.expires_at, c.lease_until)
      FROM unnest(cs) c
      WHERE l.thread_id = c.id AND ok[c.ord + 1] AND c.owner IS NOT NULL AND l.expires_at < c.lease_until;

    RETURN QUERY SELECT * FROM unnest(a_ord, a_status, a_rev, a_size, a_holder);
  END
  $$;

  -- Lease takes at load, batched the same way: troupe_take_lease's rule for
  -- each, the rows locked in id order; a batch naming one thread twice is
  -- taken one by one.
  CREATE FUNCTION troupe_take_leases(p_takes json)
  RETURNS TABLE (ord integer, status text, holder text, held_epoch bigint, held_until bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    ids text[];
    owners text[];
    nows bigint[];
    untils bigint[];
    a_status text[];
    a_holder text[];
    a_epoch bigint[];
    a_until bigint[];
  BEGIN
    SELECT array_agg(x.id ORDER BY x.n), array_agg(x.owner ORDER BY x.n), array_agg(x.now ORDER BY x.n),
           array_agg(x.until ORDER BY x.n)
      INTO ids, owners, nows, untils
      FROM ROWS FROM (json_to_recordset(p_takes) AS (id text, owner text, now bigint, until bigint))
        WITH ORDINALITY AS x(id, owner, now, until, n);
    IF cardinality(ids) IS NULL THEN
      RETURN;
    END IF;
    -- Every row there and locked in id order first, whichever way the batch
    -- is taken (leases are never deleted, so none appears after).
    INSERT INTO leases (thread_id, owner, epoch, expires_at)
      SELECT DISTINCT i, '', 0::bigint, 0::bigint FROM unnest(ids) i ORDER BY i
      ON CONFLICT (thread_id) DO NOTHING;
    PERFORM 1 FROM leases l WHERE l.thread_id IN (SELECT i FROM unnest(ids) i) ORDER BY l.thread_id FOR UPDATE;
    IF (SELECT count(DISTINCT i) FROM unnest(ids) i) <> cardinality(ids) THEN
      FOR k IN 1 .. cardinality(ids) LOOP
        RETURN QUERY SELECT k - 1, t.* FROM troupe_take_lease(ids[k], owners[k], nows[k], untils[k]) t;
      END LOOP;
      RETURN;
    END IF;
    SELECT array_agg(CASE WHEN d.owned THEN 'owned' ELSE 'taken' END ORDER BY d.k),
           array_agg(CASE WHEN d.owned THEN d.cur_owner ELSE d.owner END ORDER BY d.k),
           array_agg(CASE WHEN d.owned THEN d.cur_epoch ELSE d.cur_epoch + 1 END ORDER BY d.k),
           array_agg(CASE WHEN d.owned THEN d.cur_until ELSE d.until END ORDER BY d.k)
      INTO a_status, a_holder, a_epoch, a_until
      FROM (
        SELECT c.k, c.owner, c.until, l.owner AS cur_owner, l.epoch AS cur_epoch, l.expires_at AS cur_until,
               l.epoch > 0 AND l.owner <> c.owner AND l.expires_at > c.now AS owned
        FROM unnest(ids, owners, nows, untils) WITH ORDINALITY AS c(id, owner, now, until, k)
        JOIN leases l ON l.thread_id = c.id
      ) d;
    UPDATE leases l SET owner = c.owner, epoch = l.epoch + 1, expires_at = c.until
      FROM unnest(ids, owners, untils, a_status) AS c(id, owner, until, took)
      WHERE l.thread_id = c.id AND c.took = 'taken';

    RETURN QUERY SELECT (x.k - 1)::integer, x.s, x.h, x.e, x.u
      FROM unnest(a_status, a_holder, a_epoch, a_until) WITH ORDINALITY AS x(s, h, e, u, k);
  END
  $$;
)",
    // 6: version 5's batch without its quadratic joins. It kept only the ids
    // of the rows it locked and found their values again by joining the
    // tables to those id arrays; the planner put the array's scan inside a
    // nested loop over the batch, so each commit rescanned the whole array
    // (auto_explain: two statements of a few dozen milliseconds per batch of
    // 800, most of the server's time under durable_bench). The values are
    // now read as the rows are locked, and every decision is a hash join of
    // two arrays; what is decided, and in what order rows are locked, is
    // unchanged. Also lease releases in batches (troupe_release_leases), for
    // agents that stop by the thousand.
    R"(
  CREATE OR REPLACE FUNCTION troupe_append_batch(p_commits json)
  RETURNS TABLE (ord integer, status text, stored_rev bigint, stored_size bigint, holder text)
  LANGUAGE plpgsql AS $$
  DECLARE
    cs troupe_commit[];
    l_ids text[];
    l_owners text[];
    l_epochs bigint[];
    t_ids text[];
    t_revs bigint[];
    t_sizes bigint[];
    fenced boolean[];
    ok boolean[];
    a_ord integer[];
    a_status text[];
    a_rev bigint[];
    a_size bigint[];
    a_holder text[];
  BEGIN
    cs := ARRAY(
      SELECT ROW((x.n - 1)::integer, x.id, x.expected, x.rev, x.size, x.created, x.updated, x.metadata, x.first,
                 x.entries, x.last_message_at, x.title, x.now, x.owner, x.epoch, x.lease_until)::troupe_commit
      FROM ROWS FROM (json_to_recordset(p_commits) AS (
          id text, expected bigint, rev bigint, size bigint, created bigint, updated bigint, metadata json,
          first bigint, entries json, last_message_at bigint, title text, now bigint, owner text, epoch bigint,
          lease_until bigint)) WITH ORDINALITY
        AS x(id, expected, rev, size, created, updated, metadata, first, entries, last_message_at, title, now,
             owner, epoch, lease_until, n)
      ORDER BY x.n);
    -- Locks first, the leases then the threads, each in id order, whichever
    -- way the batch is written; each row is read as it is locked, and only
    -- what was read there decides (a row another transaction commits in
    -- between is not this batch's to judge).
    SELECT array_agg(x.thread_id), array_agg(x.owner), array_agg(x.epoch) INTO l_ids, l_owners, l_epochs
      FROM (SELECT l.thread_id, l.owner, l.epoch FROM leases l
            WHERE l.thread_id IN (SELECT c.id FROM unnest(cs) c WHERE c.owner IS NOT NULL)
            ORDER BY l.thread_id FOR UPDATE) x;
    IF (SELECT count(DISTINCT c.id) FROM unnest(cs) c) <> cardinality(cs) THEN
      PERFORM 1 FROM threads t WHERE t.id IN (SELECT c.id FROM unnest(cs) c) ORDER BY t.id FOR UPDATE;
      RETURN QUERY SELECT * FROM troupe_append_each(p_commits);
      RETURN;
    END IF;
    fenced := ARRAY(
      SELECT c.owner IS NOT NULL AND (l.id IS NULL OR l.owner <> c.owner OR l.epoch <> c.epoch)
      FROM unnest(cs) c
      LEFT JOIN unnest(l_ids, l_owners, l_epochs) AS l(id, owner, epoch) ON l.id = c.id
      ORDER BY c.ord);

    INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
      SELECT c.id, 0, 0, c.created, c.updated, c.metadata FROM unnest(cs) c
      WHERE c.expected = 0 AND NOT fenced[c.ord + 1] ORDER BY c.id
      ON CONFLICT (id) DO NOTHING;
    SELECT array_agg(x.id), array_agg(x.rev), array_agg(x.size) INTO t_ids, t_revs, t_sizes
      FROM (SELECT t.id, t.rev, t.size FROM threads t
            WHERE t.id IN (SELECT c.id FROM unnest(cs) c WHERE NOT fenced[c.ord + 1])
            ORDER BY t.id FOR UPDATE) x;

    SELECT array_agg(s.ord ORDER BY s.ord), array_agg(s.status ORDER BY s.ord), array_agg(s.stored_rev ORDER BY s.ord),
           array_agg(s.stored_size ORDER BY s.ord), array_agg(s.holder ORDER BY s.ord)
      INTO a_ord, a_status, a_rev, a_size, a_holder
      FROM (
        SELECT d.ord, d.status,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.epoch, 0) WHEN 'ok' THEN d.rev
                             ELSE COALESCE(d.cur_rev, 0) END AS stored_rev,
               CASE d.status WHEN 'fenced' THEN 0 WHEN 'ok' THEN d.size ELSE COALESCE(d.cur_size, 0) END AS stored_size,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.owner, '') ELSE '' END AS holder
        FROM (
          SELECT c.ord, c.rev, c.size, t.rev AS cur_rev, t.size AS cur_size, l.epoch, l.owner,
                 CASE WHEN fenced[c.ord + 1] THEN 'fenced'
                      WHEN t.id IS NULL OR t.rev <> c.expected OR c.size < t.size THEN 'conflict'
                      WHEN t.size <> c.first THEN 'resend'
                      ELSE 'ok' END AS status
          FROM unnest(cs) c
          LEFT JOIN unnest(t_ids, t_revs, t_sizes) AS t(id, rev, size) ON t.id = c.id
          LEFT JOIN unnest(l_ids, l_owners, l_epochs) AS l(id, owner, epoch) ON l.id = c.id
        ) d
      ) s;
    ok := ARRAY(SELECT x = 'ok' FROM unnest(a_status) x);

    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT c.id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM unnest(cs) c,
           json_to_recordset(c.entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text)
      WHERE ok[c.ord + 1];
    UPDATE threads t SET rev = c.rev, size = c.size, updated_at = c.updated, metadata = c.metadata
      FROM unnest(cs) c WHERE t.id = c.id AND ok[c.ord + 1];
    UPDATE conversations v
      SET last_message_at = GREATEST(v.last_message_at, COALESCE(c.last_message_at, 0)),
          title = CASE WHEN v.title = '' AND c.title IS NOT NULL THEN c.title ELSE v.title END,
          updated_at = c.now
      FROM unnest(cs) c
      WHERE v.thread_id = c.id AND ok[c.ord + 1] AND (c.last_message_at IS NOT NULL OR c.title IS NOT NULL);
    UPDATE leases l SET expires_at = GREATEST(l.expires_at, c.lease_until)
      FROM unnest(cs) c
      WHERE l.thread_id = c.id AND ok[c.ord + 1] AND c.owner IS NOT NULL AND l.expires_at < c.lease_until;

    RETURN QUERY SELECT * FROM unnest(a_ord, a_status, a_rev, a_size, a_holder);
  END
  $$;

  -- Leases given up in one call, each only if it is still the holder's
  -- (owner and epoch), as one release would; the rows are locked in id
  -- order first, as a batch of commits locks them, so that the two cannot
  -- wait on each other in a cycle.
  CREATE FUNCTION troupe_release_leases(p_releases json)
  RETURNS void
  LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM 1 FROM leases l
      WHERE l.thread_id IN (SELECT r.id FROM json_to_recordset(p_releases) AS r(id text))
      ORDER BY l.thread_id FOR UPDATE;
    UPDATE leases l SET expires_at = 0
      FROM json_to_recordset(p_releases) AS r(id text, owner text, epoch bigint)
      WHERE l.thread_id = r.id AND l.owner = r.owner AND l.epoch = r.epoch;
  END
  $$;
)",
    // 7: a batch no longer waits for a row another transaction holds (a
    // stuck session, an operator's open transaction): it waited until
    // statement_timeout, failed as a whole, and every commit in it waited
    // again one by one. Rows held elsewhere are skipped, their commits
    // answered 'busy', and the client writes those alone under lock_timeout.
    R"(
  CREATE OR REPLACE FUNCTION troupe_append_batch(p_commits json)
  RETURNS TABLE (ord integer, status text, stored_rev bigint, stored_size bigint, holder text)
  LANGUAGE plpgsql AS $$
  DECLARE
    cs troupe_commit[];
    l_ids text[];
    l_owners text[];
    l_epochs bigint[];
    t_ids text[];
    t_revs bigint[];
    t_sizes bigint[];
    fenced boolean[];
    busy boolean[];
    ok boolean[];
    a_ord integer[];
    a_status text[];
    a_rev bigint[];
    a_size bigint[];
    a_holder text[];
  BEGIN
    cs := ARRAY(
      SELECT ROW((x.n - 1)::integer, x.id, x.expected, x.rev, x.size, x.created, x.updated, x.metadata, x.first,
                 x.entries, x.last_message_at, x.title, x.now, x.owner, x.epoch, x.lease_until)::troupe_commit
      FROM ROWS FROM (json_to_recordset(p_commits) AS (
          id text, expected bigint, rev bigint, size bigint, created bigint, updated bigint, metadata json,
          first bigint, entries json, last_message_at bigint, title text, now bigint, owner text, epoch bigint,
          lease_until bigint)) WITH ORDINALITY
        AS x(id, expected, rev, size, created, updated, metadata, first, entries, last_message_at, title, now,
             owner, epoch, lease_until, n)
      ORDER BY x.n);
    -- Locks first, the leases then the threads, each in id order, whichever
    -- way the batch is written; each row is read as it is locked, and only
    -- what was read there decides (a row another transaction commits in
    -- between is not this batch's to judge). A row another transaction
    -- holds is skipped, and its commit answered 'busy': the client writes
    -- it on its own, under lock_timeout, and the rest go in now.
    SELECT array_agg(x.thread_id), array_agg(x.owner), array_agg(x.epoch) INTO l_ids, l_owners, l_epochs
      FROM (SELECT l.thread_id, l.owner, l.epoch FROM leases l
            WHERE l.thread_id IN (SELECT c.id FROM unnest(cs) c WHERE c.owner IS NOT NULL)
            ORDER BY l.thread_id FOR UPDATE SKIP LOCKED) x;
    -- Joined, not searched with = ANY (which scans the array per commit);
    -- the row is looked up only for a commit whose lease was not locked.
    busy := ARRAY(
      SELECT c.owner IS NOT NULL AND l.id IS NULL AND EXISTS (SELECT 1 FROM leases x WHERE x.thread_id = c.id)
      FROM unnest(cs) c LEFT JOIN unnest(l_ids) AS l(id) ON l.id = c.id
      ORDER BY c.ord);
    IF (SELECT count(DISTINCT c.id) FROM unnest(cs) c) <> cardinality(cs) THEN
      PERFORM 1 FROM threads t WHERE t.id IN (SELECT c.id FROM unnest(cs) c) ORDER BY t.id FOR UPDATE;
      RETURN QUERY SELECT * FROM troupe_append_each(p_commits);
      RETURN;
    END IF;
    fenced := ARRAY(
      SELECT c.owner IS NOT NULL AND NOT busy[c.ord + 1] AND (l.id IS NULL OR l.owner <> c.owner OR l.epoch <> c.epoch)
      FROM unnest(cs) c
      LEFT JOIN unnest(l_ids, l_owners, l_epochs) AS l(id, owner, epoch) ON l.id = c.id
      ORDER BY c.ord);

    INSERT INTO threads AS t (id, rev, size, created_at, updated_at, metadata)
      SELECT c.id, 0, 0, c.created, c.updated, c.metadata FROM unnest(cs) c
      WHERE c.expected = 0 AND NOT fenced[c.ord + 1] AND NOT busy[c.ord + 1] ORDER BY c.id
      ON CONFLICT (id) DO NOTHING;
    SELECT array_agg(x.id), array_agg(x.rev), array_agg(x.size) INTO t_ids, t_revs, t_sizes
      FROM (SELECT t.id, t.rev, t.size FROM threads t
            WHERE t.id IN (SELECT c.id FROM unnest(cs) c WHERE NOT fenced[c.ord + 1] AND NOT busy[c.ord + 1])
            ORDER BY t.id FOR UPDATE SKIP LOCKED) x;
    busy := ARRAY(
      SELECT busy[c.ord + 1] OR (NOT fenced[c.ord + 1] AND t.id IS NULL
                                 AND EXISTS (SELECT 1 FROM threads x WHERE x.id = c.id))
      FROM unnest(cs) c LEFT JOIN unnest(t_ids) AS t(id) ON t.id = c.id
      ORDER BY c.ord);

    SELECT array_agg(s.ord ORDER BY s.ord), array_agg(s.status ORDER BY s.ord), array_agg(s.stored_rev ORDER BY s.ord),
           array_agg(s.stored_size ORDER BY s.ord), array_agg(s.holder ORDER BY s.ord)
      INTO a_ord, a_status, a_rev, a_size, a_holder
      FROM (
        SELECT d.ord, d.status,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.epoch, 0) WHEN 'ok' THEN d.rev
                             ELSE COALESCE(d.cur_rev, 0) END AS stored_rev,
               CASE d.status WHEN 'fenced' THEN 0 WHEN 'ok' THEN d.size ELSE COALESCE(d.cur_size, 0) END AS stored_size,
               CASE d.status WHEN 'fenced' THEN COALESCE(d.owner, '') ELSE '' END AS holder
        FROM (
          SELECT c.ord, c.rev, c.size, t.rev AS cur_rev, t.size AS cur_size, l.epoch, l.owner,
                 CASE WHEN busy[c.ord + 1] THEN 'busy'
                      WHEN fenced[c.ord + 1] THEN 'fenced'
                      WHEN t.id IS NULL OR t.rev <> c.expected OR c.size < t.size THEN 'conflict'
                      WHEN t.size <> c.first THEN 'resend'
                      ELSE 'ok' END AS status
          FROM unnest(cs) c
          LEFT JOIN unnest(t_ids, t_revs, t_sizes) AS t(id, rev, size) ON t.id = c.id
          LEFT JOIN unnest(l_ids, l_owners, l_epochs) AS l(id, owner, epoch) ON l.id = c.id
        ) d
      ) s;
    ok := ARRAY(SELECT x = 'ok' FROM unnest(a_status) x);

    INSERT INTO entries (thread_id, seq, id, at, kind, payload, refs)
      SELECT c.id, e.seq, e.id, e.at, e.kind, e.payload::json, e.refs::json
      FROM unnest(cs) c,
           json_to_recordset(c.entries) AS e(seq bigint, id text, at bigint, kind text, payload text, refs text)
      WHERE ok[c.ord + 1];
    UPDATE threads t SET rev = c.rev, size = c.size, updated_at = c.updated, metadata = c.metadata
      FROM unnest(cs) c WHERE t.id = c.id AND ok[c.ord + 1];
    UPDATE conversations v
      SET last_message_at = GREATEST(v.last_message_at, COALESCE(c.last_message_at, 0)),
          title = CASE WHEN v.title = '' AND c.title IS NOT NULL THEN c.title ELSE v.title END,
          updated_at = c.now
      FROM unnest(cs) c
      WHERE v.thread_id = c.id AND ok[c.ord + 1] AND (c.last_message_at IS NOT NULL OR c.title IS NOT NULL);
    UPDATE leases l SET expires_at = GREATEST(l.expires_at, c.lease_until)
      FROM unnest(cs) c
      WHERE l.thread_id = c.id AND ok[c.ord + 1] AND c.owner IS NOT NULL AND l.expires_at < c.lease_until;

    RETURN QUERY SELECT * FROM unnest(a_ord, a_status, a_rev, a_size, a_holder);
  END
  $$;
)",
    // 8: a request's entries found by its id (thread_store::request_entries:
    // a retried request, a replayed turn), without reading the thread.
    R"(
  CREATE INDEX entries_by_request ON entries (thread_id, (refs->>'request_id'), seq);
)",
    // 9: a cluster of nodes (docs/cluster.md): its fixed shard count, its
    // members, and each shard's holder under a lease with a fencing epoch
    // (both timed by the database's clock, now()). A thread lease taken by
    // a shard's holder records the shard and its epoch: a newer grant of the
    // shard revokes it in the statement that makes the grant, and a take
    // under a newer grant wins over a live lease taken under an older one.
    R"(
  CREATE TABLE troupe_cluster (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    shards integer NOT NULL CHECK (shards > 0),
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE troupe_nodes (
    id text PRIMARY KEY,
    address text NOT NULL,
    build_id text NOT NULL,
    state text NOT NULL CHECK (state IN ('joining', 'active', 'leaving', 'dead')),
    started_at timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
  );
  CREATE TABLE troupe_shards (
    shard integer PRIMARY KEY,
    holder text,
    epoch bigint NOT NULL DEFAULT 0,
    lease_until timestamptz NOT NULL DEFAULT to_timestamp(0)
  );
  ALTER TABLE leases ADD COLUMN shard integer, ADD COLUMN shard_epoch bigint;
  CREATE INDEX leases_by_shard ON leases (shard, shard_epoch) WHERE shard IS NOT NULL;

  -- A thread's lease for the holder of its shard: 'not_held' (with the
  -- shard's holder and epoch) unless p_node holds the shard at p_shard_epoch
  -- under a lease the database's clock says is live, which stays locked
  -- until the take commits; 'owned' while another owner's live lease was
  -- taken under this same grant; else 'taken' with the next epoch.
  CREATE FUNCTION troupe_take_lease_in_shard(p_id text, p_owner text, p_shard integer, p_node text,
                                             p_shard_epoch bigint, p_now bigint, p_until bigint)
  RETURNS TABLE (status text, holder text, held_epoch bigint, held_until bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    s_holder text;
    s_epoch bigint;
    s_live boolean;
    cur leases%ROWTYPE;
  BEGIN
    SELECT s.holder, s.epoch, s.lease_until > now() INTO s_holder, s_epoch, s_live
      FROM troupe_shards s WHERE s.shard = p_shard FOR SHARE;
    IF NOT FOUND OR s_holder IS DISTINCT FROM p_node OR s_epoch <> p_shard_epoch OR NOT s_live THEN
      RETURN QUERY SELECT 'not_held'::text, COALESCE(s_holder, ''), COALESCE(s_epoch, 0), 0::bigint;
      RETURN;
    END IF;
    INSERT INTO leases (thread_id, owner, epoch, expires_at) VALUES (p_id, '', 0, 0)
      ON CONFLICT (thread_id) DO NOTHING;
    SELECT * INTO cur FROM leases l WHERE l.thread_id = p_id FOR UPDATE;
    IF cur.epoch > 0 AND cur.owner <> p_owner AND cur.expires_at > p_now
       AND cur.shard IS NOT DISTINCT FROM p_shard AND cur.shard_epoch >= p_shard_epoch THEN
      RETURN QUERY SELECT 'owned'::text, cur.owner, cur.epoch, cur.expires_at;
      RETURN;
    END IF;
    UPDATE leases l SET owner = p_owner, epoch = cur.epoch + 1, expires_at = p_until, shard = p_shard,
                        shard_epoch = p_shard_epoch
      WHERE l.thread_id = p_id;
    RETURN QUERY SELECT 'taken'::text, p_owner, cur.epoch + 1, p_until;
  END
  $$;
)",
    // 10: the approval requests, by the agent that asked (open_pauses: a
    // runtime started again finds the calls whose deadlines it must keep,
    // without reading every thread). Partial: approval requests are rare.
    R"(
  CREATE INDEX entries_approvals ON entries ((payload->>'agent'), thread_id, seq) WHERE kind = 'approval_request';
)",
    // 11: fencing of a node's incarnation, and a take that revokes what it
    // must and nothing more (docs/cluster.md, "Fencing").
    //
    // Each process joining as a node writes an incarnation of its own into
    // the node's row, and every grant records the incarnation it was made
    // to. A paused process replaced by another with its id shares the id,
    // not the incarnation: its heartbeat and renewals name its own and find
    // nothing, and its grants count as a dead node's. A row without one was
    // written by a node of an older troupe, whose grants are taken as its.
    //
    // The take becomes a function of two statements. In one, the revoke
    // scanned the leases with the snapshot of the statement's start, before
    // the grant waited for the shard's row (a thread lease taken under the
    // old grant holds it FOR SHARE until it commits): a lease committed in
    // that wait was not seen and survived the new grant. Its own statement
    // takes its snapshot once the grant holds the row, so every lease taken
    // under an older grant is committed by then, and no later one can be
    // taken. It also rewrites only the leases still held (a revoked one has
    // no owner), found through an index of those, instead of every lease the
    // shard ever had at every take.
    R"(
  ALTER TABLE troupe_nodes ADD COLUMN incarnation text NOT NULL DEFAULT '';
  ALTER TABLE troupe_shards ADD COLUMN holder_incarnation text NOT NULL DEFAULT '';
  DROP INDEX leases_by_shard;
  CREATE INDEX leases_held_by_shard ON leases (shard, shard_epoch) WHERE shard IS NOT NULL AND owner <> '';

  -- The compare-and-set of a shard seen at p_seen_epoch: the next epoch to
  -- p_node's incarnation p_incarnation, if nobody took the shard meanwhile
  -- and it is free, run out, or held by a node that is dead, gone, or of
  -- another incarnation; then every thread lease still held under an older
  -- epoch is revoked. No row when the shard was not taken.
  CREATE FUNCTION troupe_take_shard(p_shard integer, p_node text, p_incarnation text, p_seen_epoch bigint,
                                    p_ttl_ms bigint)
  RETURNS TABLE (granted_epoch bigint, revoked_leases bigint)
  LANGUAGE plpgsql AS $$
  DECLARE
    v_epoch bigint;
    v_revoked bigint;
  BEGIN
    UPDATE troupe_shards s SET holder = p_node, holder_incarnation = p_incarnation, epoch = s.epoch + 1,
                               lease_until = now() + p_ttl_ms * interval '1 millisecond'
      WHERE s.shard = p_shard AND s.epoch = p_seen_epoch
        AND (s.holder IS NULL OR s.lease_until <= now()
             OR NOT EXISTS (SELECT 1 FROM troupe_nodes n
                            WHERE n.id = s.holder AND n.state <> 'dead'
                              AND (n.incarnation = s.holder_incarnation OR n.incarnation = '')))
      RETURNING s.epoch INTO v_epoch;
    IF NOT FOUND THEN
      RETURN;
    END IF;
    UPDATE leases l SET owner = '', epoch = l.epoch + 1, expires_at = 0
      WHERE l.shard = p_shard AND l.shard_epoch < v_epoch AND l.owner <> '';
    GET DIAGNOSTICS v_revoked = ROW_COUNT;
    RETURN QUERY SELECT v_epoch, v_revoked;
  END
  $$;
)",
};
static_assert(std::size(migrations) == schema_version);

// Any 64-bit constant of our own: the advisory lock that serialises migrations.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7423116301)";

}  // namespace

void migrate(PGconn* c, int target) {
  auto fail = [&](const std::string& what, const result& r) {
    const std::string message = r.error(c, what).message;
    run(c, "ROLLBACK");
    throw std::runtime_error(message);
  };
  {
    result r = run(c, "BEGIN");
    if (!r.ok()) fail("migrate", r);
  }
  // Another process's migration may hold the lock for as long as it takes:
  // that is worth waiting for, where a thread's row held elsewhere is not.
  for (const char* sql : {"SET LOCAL lock_timeout = 0", migration_lock,
                          "CREATE TABLE IF NOT EXISTS troupe_schema (version integer NOT NULL)"}) {
    result r = run(c, sql);
    if (!r.ok()) fail("migrate", r);
  }
  int version = 0;
  {
    result r = run(c, "SELECT max(version) FROM troupe_schema");
    if (!r.ok()) fail("migrate", r);
    const std::string v = r.rows() == 1 ? r.text(0, 0) : "";
    version = v.empty() ? 0 : std::stoi(v);
  }
  if (version > schema_version) {
    run(c, "ROLLBACK");
    throw std::runtime_error("the PostgreSQL store has schema version " + std::to_string(version) +
                             ", newer than this troupe's " + std::to_string(schema_version));
  }
  for (; version < std::min(target, schema_version); ++version) {
    result r = run_script(c, migrations[version]);
    if (!r.ok()) fail("migrate to schema version " + std::to_string(version + 1), r);
    result bump = run(c, "INSERT INTO troupe_schema (version) VALUES ($1)", {std::to_string(version + 1)});
    if (!bump.ok()) fail("migrate", bump);
  }
  result r = run(c, "COMMIT");
  if (!r.ok()) fail("migrate", r);
}

}  // namespace troupe::postgres
