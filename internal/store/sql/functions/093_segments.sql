-- Message segments (migration 0023, docs/design.md "Message storage"): retention opens them and
-- drops them whole. Both run in the retention job, one statement each in its own transaction.

-- Opens the next segment when p_active (some queue has a retention rule) and the open one is
-- older than p_width or none is open; closes the open one when nothing has retention any more.
-- Returns the open segment afterwards (0: none). The new table is created on its own and then
-- attached, which takes SHARE UPDATE EXCLUSIVE on messages, not the ACCESS EXCLUSIVE of
-- CREATE TABLE ... PARTITION OF: pushes, pops and acks go on meanwhile.
CREATE OR REPLACE FUNCTION qg_segment_rotate(p_width interval, p_active boolean, p_now timestamptz)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    v_open message_segments;
    v_next integer;
BEGIN
    -- One rotation at a time, whichever instance runs retention.
    PERFORM pg_advisory_xact_lock(qg_job_lock_key('segments'));
    SELECT * INTO v_open FROM message_segments s WHERE s.closed_at IS NULL;
    IF FOUND AND p_active AND v_open.opened_at > v_now - p_width THEN
        RETURN v_open.seg;
    END IF;
    IF NOT p_active THEN
        UPDATE message_segments s SET closed_at = v_now WHERE s.closed_at IS NULL;
        RETURN 0;
    END IF;
    -- Writers wait while the next segment is attached and opened (qg_segment_open_lock); when
    -- the ones in flight do not let go in time, the open segment stays open until a later run.
    IF NOT qg_segment_open_lock() THEN
        RETURN coalesce(v_open.seg, 0);
    END IF;
    UPDATE message_segments s SET closed_at = v_now WHERE s.closed_at IS NULL;
    v_next := nextval('message_segments_seq');
    EXECUTE format('CREATE TABLE %I (LIKE messages INCLUDING DEFAULTS)', 'messages_s' || v_next);
    EXECUTE format('ALTER TABLE messages ATTACH PARTITION %I FOR VALUES IN (%s)', 'messages_s' || v_next, v_next);
    INSERT INTO message_segments (seg, opened_at) VALUES (v_next, v_now);
    RETURN v_next;
END $$;

-- Takes the segment-open lock exclusively for the rest of the transaction, asked for at most
-- 50 ms at a time, six times, 100 ms apart (qg_briefly); false when not granted.
--
-- Why writers hold it shared (qg_push_items, qg_transaction_run, qg_transaction_many): a
-- rotation attaches the next segment and makes it the open one in one transaction, and
-- PostgreSQL makes a commit visible to other sessions' snapshots a moment before it sends the
-- catalog invalidations of the tables it changed (they go out before its locks are released).
-- ATTACH PARTITION takes only SHARE UPDATE EXCLUSIVE on messages, which a writer's locks do not
-- conflict with, so in that moment a writer could read the new segment as the open one from
-- message_segments while its cached partition list of messages still lacked it: "no partition
-- of relation messages found for row" (seen once in 2.4 million messages of the steady run).
-- The same held for a call that wrote messages before a rotation committed and again after
-- it, in one transaction (its lock on messages already held, nothing refreshed its cache).
-- Holding this lock shared from before their first statement on messages until they commit,
-- writers see either no rotation or all of one: one that ended before their lock was granted,
-- its invalidations sent, which their next lock on a table takes in.
CREATE OR REPLACE FUNCTION qg_segment_open_lock()
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RETURN qg_briefly(format('SELECT pg_advisory_xact_lock(%s)', qg_job_lock_key('segment_open')));
END $$;

-- Runs p_statement, which takes a lock that writers in flight may hold, asking for the lock at
-- most 50 ms at a time (while a request waits for the statements in flight, every new one
-- queues behind it), six times, with pauses of 100 ms that let the queue drain; true when it
-- ran, false when the lock was not granted. Each failed try is undone alone (its block's
-- subtransaction); a successful one keeps its lock until the caller's transaction ends. The
-- caller's lock_timeout is restored either way.
CREATE OR REPLACE FUNCTION qg_briefly(p_statement text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_was text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', '50ms', true);
    FOR v_try IN 1..6 LOOP
        BEGIN
            EXECUTE p_statement;
            PERFORM set_config('lock_timeout', v_was, true);
            RETURN true;
        EXCEPTION WHEN lock_not_available THEN
            IF v_try < 6 THEN
                PERFORM pg_sleep(0.1);
            END IF;
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', v_was, true);
    RETURN false;
END $$;

-- The closed segments whose turn to go has come: closed at least p_hold ago, oldest first.
CREATE OR REPLACE FUNCTION qg_segments_due(p_hold interval, p_now timestamptz)
RETURNS SETOF integer LANGUAGE sql STABLE AS $$
    SELECT s.seg FROM message_segments s
    WHERE s.closed_at <= coalesce(p_now, clock_timestamp()) - p_hold
    ORDER BY s.seg;
$$;

-- Drops segment p_seg whole (docs/api/concepts.md §11). Its messages that retention may not
-- remove now are moved to seg 0 first, where the row-by-row rules take them in their time:
-- those of a queue without a retention rule (any more), or with a longer one, unconsumed ones
-- under completedRetentionSeconds alone, and those that may lie in a live leased batch. The
-- rest are recorded in the retention history under p_run, per partition and kind, as a
-- retention batch records them; their keys still within the dedup window become tombstones;
-- their trace records, skip marks and requeued rows are deleted; then the table is dropped.
--
-- Locks: the segment EXCLUSIVE first (readers go on; a writer still to come waits), then
-- messages ACCESS EXCLUSIVE for the drop, a moment, under a short lock_timeout. A push that
-- read this segment as the open one before it closed holds ACCESS SHARE on messages from its
-- dedup lookups until it commits, so the drop cannot pass it: the push waits for the segment,
-- the drop for the push, and the drop's timeout ends the cycle before a deadlock check would
-- pick a victim; so does a DELETE over every segment waiting here. A later run drops it.
CREATE OR REPLACE FUNCTION qg_segment_drop(p_run uuid, p_seg integer, p_now timestamptz)
RETURNS TABLE (queue_name text, partition_name text, kind text, removed bigint, unconsumed bigint,
               dead_lettered bigint, queue_tenant text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    v_tab  text := 'messages_s' || p_seg;
    v_pids uuid[];
    v_kind text[];
    v_n    bigint[];
    v_unc  bigint[];
    v_tseg integer;
BEGIN
    PERFORM pg_advisory_xact_lock(qg_job_lock_key('segments'));
    IF NOT EXISTS (SELECT 1 FROM message_segments s WHERE s.seg = p_seg AND s.closed_at IS NOT NULL) THEN
        RETURN; -- dropped meanwhile, or still open
    END IF;
    EXECUTE format('LOCK TABLE %I IN EXCLUSIVE MODE', v_tab);

    -- Each row's verdict, from its partition's state read once: the queue's rules, the slowest
    -- cursor, and the span of live leased batches (a row inside it may be leased: kept).
    CREATE TEMP TABLE qg_segment_rows (pid uuid, pos bigint, aged boolean, unc boolean, gone boolean) ON COMMIT DROP;
    INSERT INTO qg_segment_rows (pid, pos, aged, unc, gone)
    WITH parts AS (
        SELECT p.id AS pid, q.retention_enabled AS en, q.retention_seconds AS rs,
               q.completed_retention_seconds AS crs, c.mc, c.lo, c.hi
        FROM (SELECT DISTINCT m.partition_id FROM messages m WHERE m.seg = p_seg) x
        JOIN partitions p ON p.id = x.partition_id
        JOIN queue_rows q ON q.id = p.queue_id
        CROSS JOIN LATERAL (
            SELECT min(c.cursor) AS mc,
                   min(c.cursor) FILTER (WHERE c.lease_expires_at > v_now) AS lo,
                   max(c.batch_end) FILTER (WHERE c.lease_expires_at > v_now) AS hi
            FROM consumers c WHERE c.partition_id = p.id) c
    ), rq AS (
        SELECT r.partition_id, r.position, bool_or(r.in_batch) AS in_batch
        FROM requeued r GROUP BY r.partition_id, r.position
    )
    SELECT m.partition_id AS pid, m.position AS pos, v.aged,
           v.unc, pt.en AND (v.aged OR v.done) AND NOT v.leased AS gone
    FROM messages m
    JOIN parts pt ON pt.pid = m.partition_id
    LEFT JOIN rq ON rq.partition_id = m.partition_id AND rq.position = m.position
    CROSS JOIN LATERAL (
        SELECT pt.rs > 0 AND m.created_at < v_now - pt.rs * interval '1 second' AS aged,
               pt.crs > 0 AND m.created_at < v_now - pt.crs * interval '1 second'
                   AND coalesce(m.position <= pt.mc, false) AND rq.partition_id IS NULL AS done,
               coalesce(m.position > pt.lo AND m.position <= pt.hi, false) OR coalesce(rq.in_batch, false) AS leased,
               pt.mc IS NULL OR m.position > pt.mc OR rq.partition_id IS NOT NULL AS unc
    ) v
    WHERE m.seg = p_seg;

    UPDATE messages m SET seg = 0
    FROM qg_segment_rows r
    WHERE m.seg = p_seg AND NOT r.gone AND m.partition_id = r.pid AND m.position = r.pos;

    SELECT array_agg(c.pid), array_agg(c.kind), array_agg(c.n), array_agg(c.unc)
    INTO v_pids, v_kind, v_n, v_unc
    FROM (SELECT r.pid, CASE WHEN r.aged THEN 'retention' ELSE 'completed_retention' END AS kind,
                 count(*) AS n, count(*) FILTER (WHERE r.unc AND r.aged) AS unc
          FROM qg_segment_rows r WHERE r.gone GROUP BY 1, 2) c;

    -- What the dropped rows leave behind: keys still taken, in the open tombstone segment, whose
    -- expiry moves to the last of theirs; and nothing else.
    v_tseg := qg_tombstone_segment_open(v_now);
    WITH keys AS MATERIALIZED (
        SELECT m.partition_id, m.transaction_id, m.id, m.created_at,
               m.created_at + q.dedup_window_seconds * interval '1 second' AS expires
        FROM messages m
        JOIN partitions p ON p.id = m.partition_id
        JOIN queue_rows q ON q.id = p.queue_id
        WHERE m.seg = p_seg AND m.created_at + q.dedup_window_seconds * interval '1 second' > v_now
    ), written AS (
        INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at, tseg)
        SELECT k.partition_id, k.transaction_id, k.id, k.created_at, v_tseg FROM keys k
        ON CONFLICT (partition_id, transaction_id, tseg)
        DO UPDATE SET message_id = EXCLUDED.message_id, created_at = EXCLUDED.created_at
    )
    UPDATE dedup_segments d SET expires_at = greatest(d.expires_at, (SELECT max(k.expires) FROM keys k))
    WHERE d.tseg = v_tseg;
    DELETE FROM traces t USING messages m
    WHERE m.seg = p_seg AND t.partition_id = m.partition_id AND t.transaction_id = m.transaction_id;
    DELETE FROM skip_marks k USING qg_segment_rows r
    WHERE r.gone AND k.partition_id = r.pid AND k.position = r.pos;
    DELETE FROM requeued x USING qg_segment_rows r
    WHERE r.gone AND x.partition_id = r.pid AND x.position = r.pos;

    PERFORM qg_drop_table_briefly(v_tab);
    DELETE FROM message_segments s WHERE s.seg = p_seg;

    IF v_pids IS NOT NULL THEN
        RETURN QUERY SELECT * FROM qg_record_counts(p_run, v_pids, v_kind, v_n, v_unc,
            array_fill(0::bigint, ARRAY[cardinality(v_pids)]), v_now);
    END IF;
END $$;

-- Drops table p_table, a partition, whose drop takes ACCESS EXCLUSIVE on its parent, under
-- qg_briefly's bounded tries; when the lock is not granted it raises lock_not_available, which
-- rolls back the caller's transaction: a later run does it again.
CREATE OR REPLACE FUNCTION qg_drop_table_briefly(p_table text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT qg_briefly(format('DROP TABLE %I', p_table)) THEN
        RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
            MESSAGE = format('could not lock %s to drop it: statements in flight held it', p_table);
    END IF;
END $$;

-- The open tombstone segment, opened first when none is, or when the open one is older than a
-- quarter of the longest dedup window of the queues with retention (at least a minute): about
-- five tombstone segments live at a time, each dropped once every key in it expired.
CREATE OR REPLACE FUNCTION qg_tombstone_segment_open(p_now timestamptz)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_open  dedup_segments;
    v_width interval := greatest(interval '1 minute',
        (SELECT coalesce(max(q.dedup_window_seconds), 0) FROM queue_rows q WHERE q.retention_enabled)
        * interval '1 second' / 4);
    v_next  integer;
BEGIN
    SELECT * INTO v_open FROM dedup_segments d WHERE d.closed_at IS NULL;
    IF FOUND AND v_open.opened_at > p_now - v_width THEN
        RETURN v_open.tseg;
    END IF;
    UPDATE dedup_segments d SET closed_at = p_now WHERE d.closed_at IS NULL;
    v_next := nextval('dedup_segments_seq');
    EXECUTE format('CREATE TABLE %I (LIKE dedup_tombstones INCLUDING DEFAULTS)', 'dedup_tombstones_s' || v_next);
    EXECUTE format('ALTER TABLE dedup_tombstones ATTACH PARTITION %I FOR VALUES IN (%s)',
                   'dedup_tombstones_s' || v_next, v_next);
    INSERT INTO dedup_segments (tseg, opened_at, expires_at) VALUES (v_next, p_now, p_now);
    RETURN v_next;
END $$;

-- The tombstone segments whose keys had all expired by p_now, as written, oldest first: the
-- closed ones, and the open one once it is a minute old (no drop may be writing into it: both
-- run under the segments lock; the next drop that has keys opens another).
CREATE OR REPLACE FUNCTION qg_tombstone_segments_due(p_now timestamptz)
RETURNS SETOF integer LANGUAGE sql STABLE AS $$
    SELECT d.tseg FROM dedup_segments d
    WHERE d.expires_at <= coalesce(p_now, clock_timestamp())
      AND (d.closed_at IS NOT NULL OR d.opened_at <= coalesce(p_now, clock_timestamp()) - interval '1 minute')
    ORDER BY d.tseg;
$$;

-- Drops tombstone segment p_tseg whole. Keys a window raised since keeps taken move to tseg 0
-- first (replacing an older tombstone of the same key there). Locks as qg_segment_drop.
CREATE OR REPLACE FUNCTION qg_tombstone_segment_drop(p_tseg integer, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_tab text := 'dedup_tombstones_s' || p_tseg;
BEGIN
    PERFORM pg_advisory_xact_lock(qg_job_lock_key('segments'));
    IF NOT EXISTS (SELECT 1 FROM dedup_segments d WHERE d.tseg = p_tseg) THEN
        RETURN true; -- dropped meanwhile
    END IF;
    EXECUTE format('LOCK TABLE %I IN EXCLUSIVE MODE', v_tab);
    CREATE TEMP TABLE qg_tombstones_kept (partition_id uuid, transaction_id text) ON COMMIT DROP;
    INSERT INTO qg_tombstones_kept (partition_id, transaction_id)
    SELECT t.partition_id, t.transaction_id FROM dedup_tombstones t
    JOIN partitions p ON p.id = t.partition_id JOIN queue_rows q ON q.id = p.queue_id
    WHERE t.tseg = p_tseg AND t.created_at + q.dedup_window_seconds * interval '1 second' > v_now;
    DELETE FROM dedup_tombstones_keep k USING qg_tombstones_kept x
    WHERE k.partition_id = x.partition_id AND k.transaction_id = x.transaction_id;
    UPDATE dedup_tombstones t SET tseg = 0 FROM qg_tombstones_kept x
    WHERE t.tseg = p_tseg AND t.partition_id = x.partition_id AND t.transaction_id = x.transaction_id;
    PERFORM qg_drop_table_briefly(v_tab);
    DELETE FROM dedup_segments d WHERE d.tseg = p_tseg;
    RETURN true;
END $$;
