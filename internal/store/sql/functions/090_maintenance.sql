-- Background jobs (docs/api/operations.md §5, docs/api/concepts.md §11): retention, eviction, lease housekeeping
-- and cleanup. Each call is one bounded batch in its own transaction, so pushes, pops and acks
-- never wait long on a job. p_now NULL means the database clock.
--
-- Locks: a job takes consumer rows in ascending (partition, group) order, after the partition
-- rows it needs (ascending too): the order of every write path, so it cannot deadlock with
-- them. Pops never wait on a job: they skip locked consumer rows.

-- Advisory lock key of a leader job, per schema, so brokers on different schemas of one
-- database lead independently.
CREATE OR REPLACE FUNCTION qg_job_lock_key(p_job text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT hashtextextended('queen-go:' || current_schema() || ':' || p_job, 0);
$$;

-- Removes stored messages given by (partition, position), keeping each key taken until its
-- dedup window ends (docs/api/concepts.md §4.3). Trace records, skip marks and requeued rows go
-- with their message (the trigger messages_gone, migration 0023).
CREATE OR REPLACE FUNCTION qg_remove_messages(p_pids uuid[], p_positions bigint[], p_now timestamptz)
RETURNS void LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM messages m USING unnest(p_pids, p_positions) AS u (pid, pos)
        WHERE m.partition_id = u.pid AND m.position = u.pos
        RETURNING m.partition_id, m.transaction_id, m.id, m.created_at
    )
    INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at)
    SELECT g.partition_id, g.transaction_id, g.id, g.created_at
    FROM gone g
    JOIN partitions p ON p.id = g.partition_id
    JOIN queues q ON q.id = p.queue_id
    WHERE g.created_at + q.dedup_window_seconds * interval '1 second' > p_now
    ON CONFLICT (partition_id, transaction_id, tseg)
    DO UPDATE SET message_id = EXCLUDED.message_id, created_at = EXCLUDED.created_at;
$$;

-- Consumer cursors of a partition as the retention and eviction rules see them: the slowest
-- cursor (NULL when the partition has no consumer, so nothing in it is consumed).
CREATE OR REPLACE FUNCTION qg_min_cursor(p_pid uuid)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT min(c.cursor) FROM consumers c WHERE c.partition_id = p_pid;
$$;

-- Whether retention may remove the message now: older than retentionSeconds, or consumed and
-- older than completedRetentionSeconds (both only with retentionEnabled, checked by the caller).
-- p_min_cursor NULL (no consumer) means nothing is consumed; never NULL, so a scan can stop on it.
CREATE OR REPLACE FUNCTION qg_retention_due(
    p_created timestamptz, p_pos bigint, p_min_cursor bigint, p_rs integer, p_crs integer, p_now timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_rs > 0 AND p_created < p_now - p_rs * interval '1 second')
        OR (p_crs > 0 AND coalesce(p_pos <= p_min_cursor, false)
            AND p_created < p_now - p_crs * interval '1 second');
$$;

-- Adds removal counts to retention_history under p_run: per (partition, kind), n removed, of
-- which unc unconsumed (kinds retention and clear) and dead DLQ entries written. Returns what it
-- recorded, with the names.
CREATE OR REPLACE FUNCTION qg_record_counts(
    p_run uuid, p_pids uuid[], p_kinds text[], p_n bigint[], p_unc bigint[], p_dead bigint[], p_now timestamptz)
RETURNS TABLE (queue_name text, partition_name text, kind text, removed bigint, unconsumed bigint,
               dead_lettered bigint, queue_tenant text)
LANGUAGE sql AS $$
    WITH named AS (
        SELECT c.*, q.id AS qid, q.tenant AS qtenant, q.name AS qname, p.name AS pname
        FROM unnest(p_pids, p_kinds, p_n, p_unc, p_dead) AS c (pid, kind, n, unc, dead)
        JOIN partitions p ON p.id = c.pid JOIN queue_rows q ON q.id = p.queue_id
    ), recorded AS (
        INSERT INTO retention_history AS h (run_id, partition_id, kind, queue_id, tenant, queue_name,
                                            partition_name, removed, unconsumed, dead_lettered, run_at)
        SELECT p_run, n.pid, n.kind, n.qid, n.qtenant, n.qname, n.pname, n.n, n.unc, n.dead, p_now FROM named n
        ON CONFLICT ON CONSTRAINT retention_history_pkey DO UPDATE
        SET removed = h.removed + EXCLUDED.removed, unconsumed = h.unconsumed + EXCLUDED.unconsumed,
            dead_lettered = h.dead_lettered + EXCLUDED.dead_lettered
    )
    SELECT n.qname, n.pname, n.kind, n.n, n.unc, n.dead, n.qtenant FROM named n ORDER BY n.qtenant, n.qname, n.pname, n.kind;
$$;

-- Removes the given messages and adds them to retention_history under p_run, per partition and
-- kind, in the same transaction, so no removal goes unrecorded. p_unconsumed counts only for
-- kinds retention and clear; p_dead is the number of DLQ entries written for each message. Returns what
-- it recorded.
CREATE OR REPLACE FUNCTION qg_record_removals(
    p_run uuid, p_pids uuid[], p_pos bigint[], p_kinds text[], p_unconsumed boolean[],
    p_dead integer[], p_now timestamptz)
RETURNS TABLE (queue_name text, partition_name text, kind text, removed bigint, unconsumed bigint,
               dead_lettered bigint, queue_tenant text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.* FROM (
        SELECT array_agg(c.pid) AS pids, array_agg(c.kind) AS kinds, array_agg(c.n) AS n,
               array_agg(c.unc) AS unc, array_agg(c.dead) AS dead
        FROM (SELECT u.pid, u.kind, count(*) AS n,
                     count(*) FILTER (WHERE u.unc AND u.kind IN ('retention', 'clear')) AS unc,
                     sum(u.dead)::bigint AS dead
              FROM unnest(p_pids, p_kinds, p_unconsumed, p_dead) AS u (pid, kind, unc, dead)
              GROUP BY u.pid, u.kind) c
    ) a CROSS JOIN LATERAL qg_record_counts(p_run, a.pids, a.kinds, a.n, a.unc, a.dead, p_now) r;

    PERFORM qg_remove_messages(p_pids, p_pos, p_now);
END $$;

-- One retention batch (docs/api/concepts.md §11): at most p_limit messages, oldest first in each
-- partition of the queues with retentionEnabled, that retention may remove and that lie in no
-- live leased batch. A run walks the partitions once, in id order, batch after batch: a batch
-- starts at p_after (NULL: the first), looks at no more than p_limit partitions, and returns,
-- besides its counts, a row of kind '' whose walked_to is where the next one starts (NULL: the
-- walk is done). Each batch starting again from the first partition made a run's cost grow
-- with partitions × batches: at 5,000 partitions retention fell behind 2,000 msgs/s. Candidates are found without locks — a partition's scan stops at its
-- first message that is not due, since createdAt never decreases with position — and checked
-- again under the consumer-row locks, because a pop or a seek may have changed them meanwhile.
CREATE OR REPLACE FUNCTION qg_retention_batch(p_run uuid, p_limit integer, p_now timestamptz, p_after uuid)
RETURNS TABLE (queue_name text, partition_name text, kind text, removed bigint, unconsumed bigint,
               dead_lettered bigint, queue_tenant text, walked_to uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_left  integer := p_limit;
    v_seen  integer := 0;
    v_walk  uuid;
    v_p     record;
    v_m     record;
    v_pids  uuid[] := '{}';
    v_pos   bigint[] := '{}';
    v_kinds text[];
    v_unc   boolean[];
BEGIN
    FOR v_p IN
        SELECT p.id, q.retention_seconds AS rs, q.completed_retention_seconds AS crs,
               qg_min_cursor(p.id) AS min_cursor
        FROM queues q JOIN partitions p ON p.queue_id = q.id
        WHERE q.retention_enabled AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0)
          AND p.id >= coalesce(p_after, '00000000-0000-0000-0000-000000000000')
        ORDER BY p.id
    LOOP
        IF v_seen >= p_limit THEN
            v_walk := v_p.id; -- the next batch starts here
            EXIT;
        END IF;
        v_seen := v_seen + 1;
        -- Seg 0 only: the segments go whole (qg_segment_drop).
        FOR v_m IN SELECT m.position, m.created_at FROM messages m
                   WHERE m.partition_id = v_p.id AND m.seg = 0 ORDER BY m.position
        LOOP
            EXIT WHEN NOT qg_retention_due(v_m.created_at, v_m.position, v_p.min_cursor, v_p.rs, v_p.crs, v_now);
            CONTINUE WHEN qg_message_lease(v_p.id, v_m.position, v_now) IS NOT NULL;
            -- A requeued message is not consumed (docs/api/concepts.md §10, §9.3): only the
            -- age rule removes it.
            CONTINUE WHEN NOT (v_p.rs > 0 AND v_m.created_at < v_now - v_p.rs * interval '1 second')
                AND EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = v_p.id AND r.position = v_m.position);
            v_pids := v_pids || v_p.id;
            v_pos := v_pos || v_m.position;
            v_left := v_left - 1;
            EXIT WHEN v_left <= 0;
        END LOOP;
        IF v_left <= 0 THEN
            v_walk := v_p.id; -- full: the next batch goes on in this partition
            EXIT;
        END IF;
    END LOOP;
    -- The walk's row: where the next batch starts (NULL: the walk is done).
    RETURN QUERY SELECT NULL::text, NULL::text, ''::text, 0::bigint, 0::bigint, 0::bigint, NULL::text, v_walk;
    IF cardinality(v_pids) = 0 THEN
        RETURN;
    END IF;

    PERFORM 1 FROM consumers c WHERE c.partition_id = ANY (v_pids)
    ORDER BY c.partition_id, c.consumer_group FOR NO KEY UPDATE;

    SELECT array_agg(x.pid), array_agg(x.pos), array_agg(x.kind), array_agg(x.unc)
    INTO v_pids, v_pos, v_kinds, v_unc
    FROM (SELECT u.pid, u.pos,
                 CASE WHEN q.retention_seconds > 0
                       AND m.created_at < v_now - q.retention_seconds * interval '1 second'
                      THEN 'retention' ELSE 'completed_retention' END AS kind,
                 mc.c IS NULL OR u.pos > mc.c
                     OR EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = u.pid AND r.position = u.pos) AS unc
          FROM unnest(v_pids, v_pos) AS u (pid, pos)
          JOIN messages m ON m.partition_id = u.pid AND m.position = u.pos
          JOIN partitions p ON p.id = u.pid
          JOIN queues q ON q.id = p.queue_id
          CROSS JOIN LATERAL (SELECT qg_min_cursor(u.pid) AS c) mc
          WHERE q.retention_enabled
            AND qg_retention_due(m.created_at, u.pos, mc.c, q.retention_seconds,
                                 q.completed_retention_seconds, v_now)
            AND qg_message_lease(u.pid, u.pos, v_now) IS NULL
            AND ((q.retention_seconds > 0 AND m.created_at < v_now - q.retention_seconds * interval '1 second')
                 OR NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = u.pid AND r.position = u.pos))) x;
    IF v_pids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT r.*, NULL::uuid FROM qg_record_removals(p_run, v_pids, v_pos, v_kinds, v_unc,
        array_fill(0, ARRAY[cardinality(v_pids)]), v_now) r;
END $$;

-- One eviction batch (docs/api/concepts.md §11): at most p_limit messages of the queues with
-- maxWaitTimeSeconds that are unconsumed, older than it and in no live leased batch. Each gets
-- a DLQ entry 'Max wait time exceeded' for every consumer that had not consumed it (one under
-- __QUEUE_MODE__ when the partition has no consumer) and is removed in the same transaction,
-- so an evicted message is never lost without a trace. Candidates are found and re-checked, and
-- the partitions walked, as in qg_retention_batch.
CREATE OR REPLACE FUNCTION qg_eviction_batch(p_run uuid, p_limit integer, p_now timestamptz, p_after uuid)
RETURNS TABLE (queue_name text, partition_name text, kind text, removed bigint, unconsumed bigint,
               dead_lettered bigint, queue_tenant text, walked_to uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    v_left integer := p_limit;
    v_seen integer := 0;
    v_walk uuid;
    v_p    record;
    v_m    record;
    v_pids uuid[] := '{}';
    v_pos  bigint[] := '{}';
    v_dead integer[];
    v_n    integer;
BEGIN
    FOR v_p IN
        SELECT p.id, q.max_wait_time_seconds AS mw, coalesce(qg_min_cursor(p.id), 0) AS min_cursor
        FROM queues q JOIN partitions p ON p.queue_id = q.id
        WHERE q.max_wait_time_seconds > 0
          AND p.id >= coalesce(p_after, '00000000-0000-0000-0000-000000000000')
        ORDER BY p.id
    LOOP
        IF v_seen >= p_limit THEN
            v_walk := v_p.id; -- the next batch starts here
            EXIT;
        END IF;
        v_seen := v_seen + 1;
        FOR v_m IN SELECT m.position, m.created_at FROM messages m
                   WHERE m.partition_id = v_p.id AND m.position > v_p.min_cursor ORDER BY m.position
        LOOP
            EXIT WHEN v_m.created_at >= v_now - v_p.mw * interval '1 second';
            CONTINUE WHEN qg_message_lease(v_p.id, v_m.position, v_now) IS NOT NULL;
            v_pids := v_pids || v_p.id;
            v_pos := v_pos || v_m.position;
            v_left := v_left - 1;
            EXIT WHEN v_left <= 0;
        END LOOP;
        -- Requeued messages at or below every cursor are unconsumed too, their wait counted from
        -- their requeue (docs/api/concepts.md §11, §9.3). The set is nearly always empty.
        FOR v_m IN SELECT DISTINCT r.position FROM requeued r
                   WHERE r.partition_id = v_p.id AND r.position <= v_p.min_cursor
                     AND r.requeued_at < v_now - v_p.mw * interval '1 second'
                   ORDER BY r.position
        LOOP
            EXIT WHEN v_left <= 0;
            CONTINUE WHEN qg_message_lease(v_p.id, v_m.position, v_now) IS NOT NULL;
            v_pids := v_pids || v_p.id;
            v_pos := v_pos || v_m.position;
            v_left := v_left - 1;
        END LOOP;
        IF v_left <= 0 THEN
            v_walk := v_p.id; -- full: the next batch goes on in this partition
            EXIT;
        END IF;
    END LOOP;
    -- The walk's row: where the next batch starts (NULL: the walk is done).
    RETURN QUERY SELECT NULL::text, NULL::text, ''::text, 0::bigint, 0::bigint, 0::bigint, NULL::text, v_walk;
    IF cardinality(v_pids) = 0 THEN
        RETURN;
    END IF;

    -- A partition without consumers gets its first one from a pop's insert, whose foreign-key
    -- check waits for this lock; so no pop can deliver what is dead-lettered here under
    -- __QUEUE_MODE__. Partitions that have consumers are not locked: writers go on.
    PERFORM 1 FROM partitions p
    WHERE p.id = ANY (v_pids) AND NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p.id)
    ORDER BY p.id FOR UPDATE;
    PERFORM 1 FROM consumers c WHERE c.partition_id = ANY (v_pids)
    ORDER BY c.partition_id, c.consumer_group FOR NO KEY UPDATE;

    SELECT array_agg(u.pid), array_agg(u.pos) INTO v_pids, v_pos
    FROM unnest(v_pids, v_pos) AS u (pid, pos)
    JOIN messages m ON m.partition_id = u.pid AND m.position = u.pos
    JOIN partitions p ON p.id = u.pid
    JOIN queues q ON q.id = p.queue_id
    WHERE q.max_wait_time_seconds > 0
      AND ((m.created_at < v_now - q.max_wait_time_seconds * interval '1 second'
            AND u.pos > coalesce(qg_min_cursor(u.pid), 0))
           OR EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = u.pid AND r.position = u.pos
                        AND r.requeued_at < v_now - q.max_wait_time_seconds * interval '1 second'))
      AND qg_message_lease(u.pid, u.pos, v_now) IS NULL;
    IF v_pids IS NULL THEN
        RETURN;
    END IF;
    v_n := cardinality(v_pids);

    -- The group's retry counter belongs to its outstanding batch (docs/api/concepts.md §9); a
    -- requeued message is unconsumed by the groups whose set holds it, with its own counter.
    PERFORM qg_dead_letter(u.pid, u.pos, g.grp, 'Max wait time exceeded', g.r, v_now)
    FROM unnest(v_pids, v_pos) AS u (pid, pos)
    CROSS JOIN LATERAL (
        SELECT c.consumer_group AS grp,
               CASE WHEN r.position IS NOT NULL THEN r.rq WHEN u.pos <= c.batch_end THEN c.retry_count ELSE 0 END AS r
        FROM consumers c
        LEFT JOIN requeued r ON r.partition_id = c.partition_id AND r.consumer_group = c.consumer_group
                            AND r.position = u.pos
        WHERE c.partition_id = u.pid AND (c.cursor < u.pos OR r.position IS NOT NULL)
        UNION ALL
        SELECT '__QUEUE_MODE__', 0
        WHERE NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = u.pid)) g
    ORDER BY u.pid, u.pos, g.grp;
    SELECT array_agg(greatest((SELECT count(*) FROM consumers c
                               WHERE c.partition_id = u.pid
                                 AND (c.cursor < u.pos OR EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = u.pid
                                        AND r.consumer_group = c.consumer_group AND r.position = u.pos))), 1)::integer ORDER BY u.ord)
    INTO v_dead
    FROM unnest(v_pids, v_pos) WITH ORDINALITY AS u (pid, pos, ord);

    RETURN QUERY SELECT r.*, NULL::uuid FROM qg_record_removals(p_run, v_pids, v_pos,
        array_fill('max_wait_time_eviction'::text, ARRAY[v_n]), array_fill(true, ARRAY[v_n]), v_dead, v_now) r;
END $$;

-- Lease housekeeping (docs/api/operations.md §3, §5): signals every queue where a lease expired or a
-- retry delay ended since the previous run — of whichever instance led then, as recorded in
-- job_runs — up to now, so parked pops everywhere retry at once instead of at their fallback
-- poll. The NOTIFYs fire when the caller commits. The first run ever looks p_first_window back.
CREATE OR REPLACE FUNCTION qg_lease_housekeeping(p_worker text, p_first_window interval, p_now timestamptz)
RETURNS TABLE (expired_leases bigint, retries_ended bigint, queues_signalled integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_since timestamptz;
    v_qids  uuid[];
BEGIN
    SELECT j.last_now INTO v_since FROM job_runs j WHERE j.job = 'lease_housekeeping';
    v_since := least(coalesce(v_since, v_now - p_first_window), v_now);
    SELECT count(*) FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > v_since
                              AND c.lease_expires_at <= v_now),
           count(*) FILTER (WHERE c.retry_not_before > v_since AND c.retry_not_before <= v_now),
           array_agg(DISTINCT c.queue_id)
    INTO expired_leases, retries_ended, v_qids
    FROM consumers c
    WHERE (c.lease_id IS NOT NULL AND c.lease_expires_at > v_since AND c.lease_expires_at <= v_now)
       OR (c.retry_not_before > v_since AND c.retry_not_before <= v_now);
    PERFORM qg_notify_queue(q) FROM unnest(v_qids) AS q;
    queues_signalled := coalesce(cardinality(v_qids), 0);
    INSERT INTO job_runs AS j (job, last_now, worker_id, finished_at)
    VALUES ('lease_housekeeping', v_now, p_worker, clock_timestamp())
    ON CONFLICT ON CONSTRAINT job_runs_pkey DO UPDATE
    SET last_now = EXCLUDED.last_now, worker_id = EXCLUDED.worker_id, finished_at = EXCLUDED.finished_at;
    RETURN NEXT;
END $$;

-- Removes at most p_limit dedup tombstones of tseg 0 whose window has ended (docs/api/concepts.md
-- §4.3); the tombstone segments go whole (qg_tombstone_segment_drop).
CREATE OR REPLACE FUNCTION qg_cleanup_tombstones(p_limit integer, p_now timestamptz)
RETURNS bigint LANGUAGE sql AS $$
    WITH doomed AS (
        SELECT t.partition_id, t.transaction_id
        FROM dedup_tombstones_keep t
        JOIN partitions p ON p.id = t.partition_id
        JOIN queues q ON q.id = p.queue_id
        -- The first bound lets the created_at index narrow the scan.
        WHERE t.created_at <= coalesce(p_now, clock_timestamp())
                              - (SELECT coalesce(min(q2.dedup_window_seconds), 0) FROM queues q2) * interval '1 second'
          AND t.created_at + q.dedup_window_seconds * interval '1 second' <= coalesce(p_now, clock_timestamp())
        LIMIT p_limit
    ), gone AS (
        DELETE FROM dedup_tombstones_keep t USING doomed d
        WHERE t.partition_id = d.partition_id AND t.transaction_id = d.transaction_id
        RETURNING 1
    )
    SELECT count(*) FROM gone;
$$;

-- Whether a partition holds no message, keeps no dedup key alive and has seen no write,
-- claim or consumption since p_cut (qg_cleanup_partitions).
-- VOLATILE, not STABLE, for the reason qg_initial_cursor gives: a rewrite of partition_heads or
-- consumers between the caller's snapshot and this function's first lock would make them look
-- empty (the consumers' check wrongly true, the head's join wrongly empty).
CREATE OR REPLACE FUNCTION qg_partition_idle(p_pid uuid, p_cut timestamptz, p_now timestamptz)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    SELECT h.last_activity_at < p_cut
       AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.partition_id = p_pid)
       AND NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p_pid
                         AND (c.created_at >= p_cut OR c.last_consumed_at >= p_cut
                              OR c.lease_expires_at >= p_cut))
       AND NOT EXISTS (SELECT 1 FROM dedup_tombstones t WHERE t.partition_id = p_pid
                         AND t.created_at + q.dedup_window_seconds * interval '1 second' > p_now)
    FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
    WHERE p.id = p_pid;
$$;

-- Deletes at most p_limit partitions that hold no message, keep no dedup key alive and have
-- seen no write, claim or consumption for p_days days, with their consumer state (docs/api/concepts.md
-- §3). A partition some writer holds is skipped, not waited for. A write that committed
-- before the lock changed no partitions row (its push state is in partition_heads), so the
-- candidates are checked again after the locks, with a snapshot that sees it.
CREATE OR REPLACE FUNCTION qg_cleanup_partitions(p_days integer, p_limit integer, p_now timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_cut timestamptz := v_now - p_days * interval '1 day';
    v_ids uuid[];
BEGIN
    SELECT array_agg(x.id) INTO v_ids FROM (
        SELECT p.id FROM partitions p
        WHERE qg_partition_idle(p.id, v_cut, v_now)
        ORDER BY p.id
        LIMIT p_limit
        FOR UPDATE OF p SKIP LOCKED) x;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    SELECT array_agg(u.id ORDER BY u.id) INTO v_ids FROM unnest(v_ids) AS u (id)
    WHERE qg_partition_idle(u.id, v_cut, v_now);
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM 1 FROM consumers c WHERE c.partition_id = ANY (v_ids)
    ORDER BY c.partition_id, c.consumer_group FOR UPDATE;
    DELETE FROM partitions p WHERE p.id = ANY (v_ids);
    -- The group listings read the stats job's lag (qg_lagging_pairs): their pairs go too.
    DELETE FROM stats_consumers sc WHERE sc.partition_id = ANY (v_ids);
    RETURN cardinality(v_ids);
END $$;

-- Removes at most p_limit rows from each history table past its keeping time: stats history
-- after p_stats_days, retention history and metrics after p_metrics_days. more says whether
-- some table had more to remove.
CREATE OR REPLACE FUNCTION qg_cleanup_history(
    p_stats_days integer, p_metrics_days integer, p_limit integer, p_now timestamptz)
RETURNS TABLE (removed bigint, more boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_t   record;
    v_n   bigint;
BEGIN
    removed := 0;
    more := false;
    FOR v_t IN SELECT * FROM (VALUES
            ('stats_history', 'bucket', v_now - p_stats_days * interval '1 day'),
            ('retention_history', 'run_at', v_now - p_metrics_days * interval '1 day'),
            ('metrics_worker_minute', 'minute', v_now - p_metrics_days * interval '1 day'),
            ('metrics_queue_minute', 'minute', v_now - p_metrics_days * interval '1 day')) AS t (tbl, col, cut)
    LOOP
        EXECUTE format('DELETE FROM %1$I h WHERE h.ctid = ANY (ARRAY(SELECT x.ctid FROM %1$I x WHERE x.%2$I < $1 LIMIT $2))',
                       v_t.tbl, v_t.col) USING v_t.cut, p_limit;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        removed := removed + v_n;
        more := more OR v_n >= p_limit;
    END LOOP;
    RETURN NEXT;
END $$;

-- Claims the start of a run of p_job for p_worker: true, recording the start, when no run of it
-- started within p_gap before now (NULL: always, for a run asked for by a route), nor within
-- p_stretch times the latest recorded run's duration: a job whose runs grow long (the stats job
-- over a hundred thousand partitions) then runs at most 1/p_stretch of the time, however short
-- its interval. Runs under the job's advisory lock; the WHERE clause guards the transition on
-- its own too. The database's clock_timestamp() decides, not the store's clock: the schedule is
-- real time, like the tickers that ask (tests that set the store's clock still get every
-- scheduled run).
CREATE OR REPLACE FUNCTION qg_job_claim(p_job text, p_gap interval, p_worker text, p_stretch integer)
RETURNS boolean LANGUAGE sql AS $$
    WITH last AS (
        SELECT coalesce((SELECT l.duration_ms FROM job_run_log l WHERE l.job = p_job
                         ORDER BY l.started_at DESC LIMIT 1), 0) * p_stretch * interval '1 millisecond' AS span
    ), c AS (
        INSERT INTO job_schedule AS s (job, started_at, worker_id)
        VALUES (p_job, clock_timestamp(), p_worker)
        ON CONFLICT (job) DO UPDATE SET started_at = EXCLUDED.started_at, worker_id = EXCLUDED.worker_id
        WHERE p_gap IS NULL OR s.started_at <= EXCLUDED.started_at - greatest(p_gap, (SELECT span FROM last))
        RETURNING true AS claimed
    )
    SELECT coalesce((SELECT claimed FROM c), false);
$$;
