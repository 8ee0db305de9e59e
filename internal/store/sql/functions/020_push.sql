-- Raised when a push names a queue or partition that does not exist yet; the caller creates
-- them in their own committed step (qg_ensure_partitions) and calls again.
CREATE OR REPLACE FUNCTION qg_raise_missing_partitions() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'QG001', MESSAGE = 'QG001';
END $$;

-- Wakes parked pops of a queue on every instance; NOTIFY fires only when the caller commits.
-- Used by the rare writers (configure, seeks, housekeeping). Pushes and acks do not notify
-- inside their transaction (it would serialise their commits): the broker signals after them
-- through qg_notify_queues.
-- The payload is [name, namespace, task, tenant]: a wake-up reaches no pop of another tenant.
CREATE OR REPLACE FUNCTION qg_notify_queue(p_queue_id uuid) RETURNS void LANGUAGE sql AS $$
    SELECT pg_notify('qg_wake:' || current_schema(), json_build_array(q.name, q.namespace, q.task, q.tenant)::text)
    FROM queues q WHERE q.id = p_queue_id;
$$;

-- Signals the named queues to every instance, in its own transaction, after their writes.
-- PL/pgSQL so that its plan is kept: it runs after every push and ack flush.
-- p_tenants and p_names are pairs (the broker sends its signals unscoped, for every tenant).
CREATE OR REPLACE FUNCTION qg_notify_queues(p_tenants text[], p_names text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('qg_wake:' || current_schema(), json_build_array(q.name, q.namespace, q.task, q.tenant)::text)
    FROM unnest(p_tenants, p_names) AS u (t, n)
    JOIN queues q ON q.tenant = u.t AND q.name = u.n;
END $$;

-- One item's outcome in a push plan: carried between the statements of qg_push_items and
-- returned by it and qg_push. (Row types live with their functions: installFunctions drops
-- them with the functions and these files create them again.)
CREATE TYPE qg_push_plan AS (
    i        integer,   -- 0-based item index
    status   text,      -- queued | duplicate | failed | taken (the first item of a key already stored)
    mid      uuid,      -- message id: minted (queued), existing (duplicate)
    pid      uuid,
    pos      bigint,    -- allocated position (queued only)
    qid      uuid,
    qname    text,
    pname    text
);

-- Writes push items into existing partitions (docs/api/concepts.md §4). Shared by the push route
-- (p_strict = false: taken keys report duplicate, a full queue reports failed per item) and the
-- transaction route (p_strict = true: the first taken key raises QDUP, a full queue QFULL).
-- Locks capped queues, then partitions, in ascending id order (the order of every write path),
-- then allocates positions in request order while holding the locks. Items flagged in
-- p_uncapped (NULL: none) are written whatever their queue's maxSize: replayed spooled pushes,
-- accepted when they were spooled (docs/api/operations.md §4.2); they still count towards the
-- cap of the capped items after them.
--
-- One item goes to qg_push_one, more to qg_push_set: the same decisions, but a set-based
-- statement pays its executor start-up (windows, CTEs) in full for one item, which made the
-- pipeline stage's one push cost about 1 ms of backend CPU (bench/HISTORY.md, 2026-12-02).
-- Calls of fewer than 100 items run qg_push_set under generic plans (qg_push_set_generic,
-- 155_push_set_generic.sql), larger ones under custom plans.
CREATE OR REPLACE FUNCTION qg_push_items(
    p_pids uuid[], p_keys text[], p_ids uuid[], p_payloads text[], p_encrypted boolean[],
    p_traces uuid[], p_subs text[], p_now timestamptz, p_strict boolean,
    p_uncapped boolean[] DEFAULT NULL)
RETURNS SETOF qg_push_plan LANGUAGE plpgsql AS $$
DECLARE
    v_limit bigint;
BEGIN
    -- Shared against a rotation attaching the next segment, before anything reads messages:
    -- the open segment read later is then one this session's partition list of messages holds
    -- (qg_segment_open_lock, 093_segments.sql).
    PERFORM pg_advisory_xact_lock_shared(qg_job_lock_key('segment_open'));
    -- The tenant's stored-messages limit (130_tenant_limits.sql): its row locked before the
    -- push's own locks, the count checked after the writes; a replay of spooled pushes (every
    -- item uncapped) was accepted when it was spooled and is not checked.
    IF p_uncapped IS NULL OR NOT (true = ALL (p_uncapped)) THEN
        v_limit := qg_tenant_limit('messages');
    END IF;
    IF cardinality(p_pids) = 1 THEN
        RETURN QUERY SELECT * FROM qg_push_one(p_pids[1], p_keys[1], p_ids[1], p_payloads[1], p_encrypted[1],
            p_traces[1], p_subs[1], p_now, p_strict, coalesce(p_uncapped[1], false));
    ELSIF cardinality(p_pids) < 100 THEN
        RETURN QUERY SELECT * FROM qg_push_set_generic(p_pids, p_keys, p_ids, p_payloads, p_encrypted, p_traces,
            p_subs, p_now, p_strict, p_uncapped);
    ELSE
        RETURN QUERY SELECT * FROM qg_push_set(p_pids, p_keys, p_ids, p_payloads, p_encrypted, p_traces,
            p_subs, p_now, p_strict, p_uncapped);
    END IF;
    PERFORM qg_check_tenant_limit('messages', v_limit);
END $$;

-- qg_push_items for one item: the same locks in the same order, the same decision (a stored
-- key or unexpired tombstone is taken, a capped queue at its maxSize fails the item unless it
-- is uncapped), the same createdAt rule and the same writes, each as one simple statement.
CREATE OR REPLACE FUNCTION qg_push_one(
    p_pid uuid, p_key text, p_id uuid, p_payload text, p_encrypted boolean, p_trace uuid,
    p_sub text, p_now timestamptz, p_strict boolean, p_uncapped boolean)
RETURNS SETOF qg_push_plan LANGUAGE plpgsql AS $$
DECLARE
    v_now   timestamptz;
    v_last  bigint;
    v_qid   uuid;
    v_qname text;
    v_pname text;
    v_max   integer;
    v_dw    integer;
    v_mid   uuid;
    v_st    text;
    v_at    timestamptz;
    v_l_at  timestamptz;
    v_l_id  uuid;
    v_seg   integer;
BEGIN
    PERFORM 1 FROM queues q
    WHERE q.max_size > 0 AND q.id = (SELECT p.queue_id FROM partitions p WHERE p.id = p_pid)
    FOR NO KEY UPDATE;
    SELECT p.queue_id, p.name INTO v_qid, v_pname
    FROM partitions p WHERE p.id = p_pid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        PERFORM qg_raise_missing_partitions();
    END IF;
    v_now := coalesce(p_now, clock_timestamp());
    -- The head is read after the lock, in a statement of its own: its snapshot then sees the
    -- last writer's commit (a join in the locking statement would read it with the snapshot
    -- taken before waiting for the lock).
    SELECT h.last_position, h.last_message_at, h.last_message_id, q.name, q.max_size, q.dedup_window_seconds
    INTO v_last, v_l_at, v_l_id, v_qname, v_max, v_dw
    FROM partition_heads h, queues q WHERE h.partition_id = p_pid AND q.id = v_qid;

    v_mid := coalesce(
        (SELECT m.id FROM messages m WHERE m.partition_id = p_pid AND m.transaction_id = p_key),
        (SELECT t.message_id FROM dedup_tombstones t
         WHERE t.partition_id = p_pid AND t.transaction_id = p_key
           AND t.created_at + v_dw * interval '1 second' > v_now
         ORDER BY t.created_at DESC LIMIT 1));
    IF v_mid IS NOT NULL THEN
        v_st := 'taken';
    ELSIF v_max = 0 OR p_uncapped OR qg_unconsumed_count(v_qid) + 1 <= v_max THEN
        v_st := 'queued';
    ELSE
        v_st := 'failed';
    END IF;
    IF p_strict AND v_st = 'taken' THEN
        RAISE EXCEPTION USING ERRCODE = 'QG002', MESSAGE = 'QG002', DETAIL = json_build_array(v_qname, v_pname)::text;
    END IF;
    IF p_strict AND v_st = 'failed' THEN
        RAISE EXCEPTION USING ERRCODE = 'QG003', MESSAGE = 'QG003', DETAIL = json_build_array(v_qname)::text;
    END IF;
    IF v_st <> 'queued' THEN
        RETURN QUERY SELECT 0, v_st, coalesce(v_mid, p_id), p_pid, NULL::bigint, v_qid, v_qname, v_pname;
        RETURN;
    END IF;

    -- createdAt as qg_push_set decides it for a partition's first item: the clock, or the
    -- newest message's createdAt (kept in its head) when that is later; one millisecond more
    -- when this id does not rise above the newest message's and the two would share a
    -- millisecond.
    v_at := greatest(v_now, v_l_at);
    IF p_now IS NULL AND v_l_id IS NOT NULL AND p_id <= v_l_id
       AND date_trunc('milliseconds', v_at) = date_trunc('milliseconds', v_l_at) THEN
        v_at := v_at + interval '1 millisecond';
    END IF;
    IF p_now IS NULL AND v_at > clock_timestamp() THEN -- not in the future; bounded: the lock is held
        PERFORM pg_sleep(least(extract(epoch FROM v_at - clock_timestamp()), 0.005));
    END IF;

    -- The open segment for a queue with retention, else seg 0 (015_segments.sql).
    v_seg := qg_open_segment();
    IF v_seg > 0 AND cardinality(qg_segmented_queues(ARRAY[v_qid])) = 0 THEN
        v_seg := 0;
    END IF;
    INSERT INTO messages (partition_id, position, id, transaction_id, payload, encrypted, trace_id,
                          producer_sub, created_at, seg)
    VALUES (p_pid, v_last + 1, p_id, p_key, p_payload::json, p_encrypted, p_trace, p_sub, v_at, v_seg);
    UPDATE partition_heads h SET last_position = v_last + 1, last_message_at = v_at, last_message_id = p_id,
                                 last_activity_at = v_now
    WHERE h.partition_id = p_pid;
    INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
    SELECT p_pid, s.consumer_group, v_qid, v_now FROM subscriptions s WHERE s.queue_id = v_qid
    ORDER BY s.consumer_group
    ON CONFLICT DO NOTHING;
    RETURN QUERY SELECT 0, v_st, p_id, p_pid, v_last + 1, v_qid, v_qname, v_pname;
END $$;

-- qg_push_items for more than one item: set-based, each step a window over the whole request.
-- Every statement reaches its rows by key, and sequential scans are off so that no cached plan
-- can do otherwise: PostgreSQL keeps a generic plan after five calls when it looks no dearer
-- than the custom ones (it estimates an array parameter at ten elements), and one made while
-- `partitions` was small and analyzed scanned the table and compared every row with every
-- element of the call's list; when the table then grew faster than ANALYZE ran, a call of
-- 1,000 items over 100,000 partitions took seconds (bench/HISTORY.md, "The partition sweep's
-- two speeds"; TestPushProbesPartitionsWhateverThePlanCached).
CREATE OR REPLACE FUNCTION qg_push_set(
    p_pids uuid[], p_keys text[], p_ids uuid[], p_payloads text[], p_encrypted boolean[],
    p_traces uuid[], p_subs text[], p_now timestamptz, p_strict boolean,
    p_uncapped boolean[])
RETURNS SETOF qg_push_plan LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_now  timestamptz;
    v_plan qg_push_plan[];
    v_bad  qg_push_plan;
    v_held integer;
    v_times timestamptz[];
    v_wait interval;
    v_pid  uuid;
    v_parts uuid[]; -- the call's distinct partitions
    v_seg  integer;
    v_segq uuid[] := '{}'; -- the call's queues whose messages go to segment v_seg
BEGIN
    PERFORM 1 FROM queues q
    WHERE q.max_size > 0 AND q.id IN (SELECT p.queue_id FROM partitions p WHERE p.id = ANY (p_pids))
    ORDER BY q.id FOR NO KEY UPDATE;
    -- All partitions in one statement when none is locked. When another writer holds some,
    -- they are locked one statement each instead, in the same order, waiting for the holder:
    -- a statement that waited re-checks every row the holder updated meanwhile against its
    -- older snapshot (EvalPlanQual), and for the one bulk statement each re-check evaluates
    -- `= ANY (p_pids)` anew, so a 1,000-item call over 450 partitions that waited cost
    -- 140 ms of CPU instead of 66; one statement per row re-checks one row, and the rows
    -- after the wait are read with a fresh snapshot (bench/HISTORY.md, "Spread pushes and the
    -- lock convoy"). The failed NOWAIT attempt is rolled back, locks and all (its own
    -- subtransaction).
    BEGIN
        PERFORM 1 FROM partitions p WHERE p.id = ANY (p_pids) ORDER BY p.id FOR NO KEY UPDATE NOWAIT;
        GET DIAGNOSTICS v_held = ROW_COUNT;
    EXCEPTION WHEN lock_not_available THEN
        v_held := 0;
        FOR v_pid IN SELECT DISTINCT x FROM unnest(p_pids) x ORDER BY x LOOP
            PERFORM 1 FROM partitions p WHERE p.id = v_pid FOR NO KEY UPDATE;
            IF FOUND THEN
                v_held := v_held + 1;
            END IF;
        END LOOP;
    END;
    -- A partition deleted (queue deletion) after the caller resolved its id is simply not
    -- locked; writing the rest would silently drop its items and return fewer results than
    -- items. Report it missing instead: the caller recreates it and writes again.
    IF v_held < (SELECT count(DISTINCT x) FROM unnest(p_pids) x) THEN
        PERFORM qg_raise_missing_partitions();
    END IF;
    v_now := coalesce(p_now, clock_timestamp());
    v_parts := ARRAY(SELECT DISTINCT x FROM unnest(p_pids) x);

    -- Each step is a window over the whole request (no self-joins), so the plan stays linear
    -- in the number of items. The call's partitions are read once each (heads): their rows,
    -- their push state and their queue, through the primary keys (a probe per partition, never
    -- a scan over partition_heads' dead versions). Their values reach the items without a join
    -- between the two lists: the head rows go into the items' stream, sorted first in their
    -- partition, and a window carries them to the items after them. (A join let the planner,
    -- which estimates both lists at a few rows, probe the heads' index once per item with the
    -- whole `= ANY (partitions)` list in the index condition, each probe descending once per
    -- listed partition: a 1,000-item call over 450 partitions spent 80 ms there, BenchmarkPushCall.)
    -- Each partition with its head and queue by key probes (OFFSET 0 keeps the subquery from
    -- being flattened into a join): a generic plan cached while the tables were small hashed a
    -- scan of every partition into each call instead, 10 ms a push at 100,000 partitions
    -- (TestPushProbesPartitionsWhateverThePlanCached).
    WITH heads AS MATERIALIZED (
        SELECT x.pid, r.qid, r.qname, r.pname, r.max_size, r.dw, r.last_position, r.l_at, r.l_id
        FROM unnest(v_parts) AS x (pid)
        CROSS JOIN LATERAL (
            SELECT p.queue_id AS qid, q.name AS qname, p.name AS pname, q.max_size,
                   q.dedup_window_seconds AS dw, h.last_position, h.last_message_at AS l_at,
                   h.last_message_id AS l_id
            FROM partitions p
            JOIN partition_heads h ON h.partition_id = p.id
            JOIN queues q ON q.id = p.queue_id
            WHERE p.id = x.pid
            OFFSET 0) r
    ), items AS MATERIALIZED (
        SELECT (z.ord - 1)::int AS i, z.pid, z.k, z.mid, z.qid, z.qname, z.pname, z.max_size, z.dw,
               z.last_position, z.l_at, z.l_id, coalesce(z.unc, false) AS uncapped,
               -- keys compare byte-wise (COLLATE "C"): equality is all that matters, and it is far
               -- cheaper than the database collation
               row_number() OVER (PARTITION BY z.pid, z.k COLLATE "C" ORDER BY z.ord) AS dup_rank
        FROM (
            SELECT s.ord, s.pid, s.k, s.mid, s.unc,
                   first_value(s.qid) OVER w AS qid, first_value(s.qname) OVER w AS qname,
                   first_value(s.pname) OVER w AS pname, first_value(s.max_size) OVER w AS max_size,
                   first_value(s.dw) OVER w AS dw, first_value(s.last_position) OVER w AS last_position,
                   first_value(s.l_at) OVER w AS l_at, first_value(s.l_id) OVER w AS l_id
            FROM (
                -- (a NULL p_uncapped unnests as no rows: every item gets NULL)
                SELECT u.ord, u.pid, u.k, u.mid, u.unc, NULL::uuid AS qid, NULL::text AS qname,
                       NULL::text AS pname, NULL::integer AS max_size, NULL::integer AS dw,
                       NULL::bigint AS last_position, NULL::timestamptz AS l_at, NULL::uuid AS l_id
                FROM unnest(p_pids, p_keys, p_ids, p_uncapped) WITH ORDINALITY AS u (pid, k, mid, unc, ord)
                UNION ALL
                SELECT 0, hd.pid, NULL, NULL, NULL, hd.qid, hd.qname, hd.pname, hd.max_size, hd.dw,
                       hd.last_position, hd.l_at, hd.l_id
                FROM heads hd
            ) s
            WINDOW w AS (PARTITION BY s.pid ORDER BY s.ord)
        ) z
        WHERE z.ord > 0
    ), firsts AS MATERIALIZED (
        -- the stored message (or unexpired tombstone) that already holds a request's first key
        SELECT it.*, CASE WHEN it.dup_rank = 1 THEN coalesce(
                   (SELECT m.id FROM messages m WHERE m.partition_id = it.pid AND m.transaction_id = it.k),
                   (SELECT t.message_id FROM dedup_tombstones t
                    WHERE t.partition_id = it.pid AND t.transaction_id = it.k
                      AND t.created_at + it.dw * interval '1 second' > v_now
                    ORDER BY t.created_at DESC LIMIT 1)) END AS existing
        FROM items it
    ), fresh AS MATERIALIZED (
        SELECT f.*, (f.dup_rank = 1 AND f.existing IS NULL) AS is_new,
               row_number() OVER (PARTITION BY f.qid, f.dup_rank = 1 AND f.existing IS NULL ORDER BY f.i) AS qseq
        FROM firsts f
    ), counts AS MATERIALIZED (
        SELECT DISTINCT f.qid, qg_unconsumed_count(f.qid) AS n FROM fresh f WHERE f.max_size > 0 AND f.is_new
    ), decided AS MATERIALIZED (
        SELECT f.*, CASE
                   WHEN f.dup_rank > 1 THEN NULL
                   WHEN f.existing IS NOT NULL THEN 'taken'
                   WHEN f.max_size = 0 OR f.uncapped THEN 'queued'
                   WHEN (SELECT c.n FROM counts c WHERE c.qid = f.qid) + f.qseq <= f.max_size THEN 'queued'
                   ELSE 'failed' END AS st
        FROM fresh f
    ), positioned AS MATERIALIZED (
        -- q: the partition's queued items (and apart, the rest) in request order, which is
        -- their position order
        SELECT d.*, row_number() OVER q AS rk, lag(d.mid) OVER q AS lag_id,
               first_value(d.st) OVER w AS winner_st,
               first_value(coalesce(d.existing, d.mid)) OVER w AS winner_mid
        FROM decided d
        WINDOW w AS (PARTITION BY d.pid, d.k COLLATE "C" ORDER BY d.i),
               q AS (PARTITION BY d.pid, d.st = 'queued' ORDER BY d.i)
    ), descents AS (
        -- createdAt per queued item (docs/api/streams.md §7): within a partition, (createdAt
        -- cut to the millisecond, then id) must rise with position, whoever wrote the
        -- messages. Positions follow commit order under the partition lock and the clock is
        -- read under it, so createdAt never falls; but ids are minted before the lock (by the
        -- broker, and by whichever instance), so an id can be below the one before it, the
        -- partition's newest message (its head) for the first item. Such an item (a descent)
        -- starts the next millisecond: each item's createdAt is the clock (or the newest
        -- message's createdAt, when later) plus one millisecond per descent up to it in its
        -- partition; the call then waits (holding the lock) until the clock has reached the
        -- last of them, so that no message is dated in the future and the next writer,
        -- reading the clock after this commit, continues after it. Go mints ids in
        -- increasing order in one process, so descents happen only where two calls cross;
        -- most calls wait for nothing. Under a fixed test clock (p_now given) time cannot move
        -- on: createdAt is p_now.
        SELECT p.*, greatest(v_now, p.l_at) AS base,
               CASE WHEN p_now IS NULL AND p.st = 'queued'
                         AND p.mid <= coalesce(p.lag_id, CASE WHEN p.rk = 1 THEN p.l_id END)
                         AND (p.rk > 1 OR date_trunc('milliseconds', greatest(v_now, p.l_at))
                                          = date_trunc('milliseconds', p.l_at))
                    THEN 1 ELSE 0 END AS descent
        FROM positioned p
    ), dated AS (
        SELECT x.*, x.last_position + x.rk AS pos,
               x.base + sum(x.descent) OVER (PARTITION BY x.pid, x.st = 'queued' ORDER BY x.i)
                        * interval '1 millisecond' AS at
        FROM descents x
    )
    SELECT array_agg(ROW(x.i,
               CASE WHEN x.dup_rank = 1 THEN x.st WHEN x.winner_st = 'failed' THEN 'failed' ELSE 'duplicate' END,
               x.winner_mid, x.pid, CASE WHEN x.st = 'queued' THEN x.pos END, x.qid, x.qname, x.pname
           )::qg_push_plan ORDER BY x.i),
           array_agg(CASE WHEN x.st = 'queued' THEN x.at END ORDER BY x.i)
    INTO v_plan, v_times
    FROM dated x;

    IF p_strict THEN
        SELECT * INTO v_bad FROM unnest(v_plan) x WHERE x.status = 'taken' ORDER BY x.i LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'QG002', MESSAGE = 'QG002',
                DETAIL = json_build_array(v_bad.qname, v_bad.pname)::text;
        END IF;
        SELECT * INTO v_bad FROM unnest(v_plan) x WHERE x.status = 'failed' ORDER BY x.i LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'QG003', MESSAGE = 'QG003',
                DETAIL = json_build_array(v_bad.qname)::text;
        END IF;
    END IF;

    -- The call waits until the clock has reached the latest createdAt it gave (descents).
    IF p_now IS NULL THEN
        SELECT max(t) - clock_timestamp() INTO v_wait FROM unnest(v_times) t;
        IF v_wait > interval '0' THEN
            PERFORM pg_sleep(least(extract(epoch FROM v_wait), 0.005)); -- bounded: the lock is held
        END IF;
    END IF;

    -- The plan is in item order, so it is read in step with the item arrays. (Subscripting
    -- them, p_payloads[x.i + 1], costs O(i) per element on a text array: quadratic in the
    -- size of a coalesced call, half of the insert's time at 900 items.)
    -- The open segment for the queues with retention, else seg 0 (015_segments.sql).
    v_seg := qg_open_segment();
    IF v_seg > 0 THEN
        v_segq := qg_segmented_queues(ARRAY(SELECT DISTINCT x.qid FROM unnest(v_plan) x));
    END IF;
    INSERT INTO messages (partition_id, position, id, transaction_id, payload, encrypted, trace_id,
                          producer_sub, created_at, seg)
    SELECT x.pid, x.pos, x.mid, x.k, x.payload::json, x.enc, x.trace, x.sub, x.at,
           CASE WHEN x.qid = ANY (v_segq) THEN v_seg ELSE 0 END
    FROM ROWS FROM (unnest(v_plan), unnest(p_keys, p_payloads, p_encrypted, p_traces, p_subs, v_times))
         AS x (i, status, mid, pid, pos, qid, qname, pname, k, payload, enc, trace, sub, at)
    WHERE x.status = 'queued';

    UPDATE partition_heads h SET last_position = c.top, last_message_at = c.newest, last_message_id = c.newest_id,
                                 last_activity_at = v_now
    FROM (SELECT DISTINCT ON (x.pid) x.pid, x.pos AS top, x.at AS newest, x.mid AS newest_id
          FROM ROWS FROM (unnest(v_plan), unnest(v_times))
               AS x (i, status, mid, pid, pos, qid, qname, pname, at)
          WHERE x.status = 'queued' ORDER BY x.pid, x.pos DESC) c
    WHERE h.partition_id = c.pid;

    -- Every group registered on a written queue now has work in the partition (partition_work).
    INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
    SELECT w.pid, s.consumer_group, w.qid, v_now
    FROM (SELECT DISTINCT x.pid, x.qid FROM unnest(v_plan) x WHERE x.status = 'queued') w
    JOIN subscriptions s ON s.queue_id = w.qid
    ORDER BY w.pid, s.consumer_group
    ON CONFLICT DO NOTHING;


    RETURN QUERY SELECT * FROM unnest(v_plan) x ORDER BY x.i;
END $$;

-- The push route in one round trip: resolves names to partitions (raising QG001 when some do
-- not exist yet) and writes the items. The names come once per distinct (queue, partition)
-- pair, p_pair_of giving each item's pair (1-based); p_pair_ids, when the caller knows them
-- all, are the pairs' partition ids (a deleted one raises QG001 in qg_push_items). One call
-- may carry several coalesced requests, so the producer identity (p_subs) is per item. Taken
-- keys come back as 'taken' with the stored id.
CREATE OR REPLACE FUNCTION qg_push(
    p_queues text[], p_partitions text[], p_pair_ids uuid[], p_pair_of integer[], p_keys text[],
    p_ids uuid[], p_payloads text[], p_encrypted boolean[], p_subs text[], p_uncapped boolean[],
    p_now timestamptz)
RETURNS SETOF qg_push_plan LANGUAGE plpgsql AS $$
DECLARE
    v_pairs uuid[] := coalesce(p_pair_ids, qg_partition_ids(p_queues, p_partitions));
    v_pids  uuid[];
BEGIN
    IF array_position(v_pairs, NULL) IS NOT NULL THEN
        PERFORM qg_raise_missing_partitions();
    END IF;
    v_pids := ARRAY(SELECT v_pairs[u.j] FROM unnest(p_pair_of) WITH ORDINALITY AS u (j, ord) ORDER BY u.ord);
    RETURN QUERY SELECT * FROM qg_push_items(v_pids, p_keys, p_ids, p_payloads, p_encrypted,
        array_fill(NULL::uuid, ARRAY[cardinality(p_ids)]), p_subs, p_now, false, p_uncapped);
END $$;
