-- Copies a message into the DLQ for one group (docs/api/concepts.md §9).
CREATE OR REPLACE FUNCTION qg_dead_letter(
    p_partition_id uuid, p_position bigint, p_group text, p_reason text, p_retry_count integer,
    p_now timestamptz)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO dlq (id, queue_id, partition_id, queue_name, partition_name, consumer_group,
                     message_id, transaction_id, error_message, retry_count, payload, trace_id,
                     producer_sub, encrypted, created_at, failed_at)
    SELECT gen_random_uuid(), q.id, p.id, q.name, p.name, p_group, m.id, m.transaction_id,
           p_reason, p_retry_count, m.payload, m.trace_id, m.producer_sub, m.encrypted,
           m.created_at, p_now
    FROM messages m
    JOIN partitions p ON p.id = m.partition_id
    JOIN queues q ON q.id = p.queue_id
    WHERE m.partition_id = p_partition_id AND m.position = p_position;
$$;

-- Writes an evaluated ack group to its consumer row (the caller holds it locked): the new
-- cursor, the retry count and delay, and, when p_released, the end of the lease. A completed
-- batch reorders its pair in the work index by the next message.
CREATE OR REPLACE FUNCTION qg_ack_settle(
    p_pid uuid, p_group text, p_old_cursor bigint, p_cursor bigint, p_retry integer,
    p_retry_not_before timestamptz, p_released boolean, p_now timestamptz)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    UPDATE consumers c SET
        cursor = p_cursor,
        lease_id = CASE WHEN p_released THEN NULL ELSE c.lease_id END,
        lease_expires_at = CASE WHEN p_released THEN NULL ELSE c.lease_expires_at END,
        batch_end = CASE WHEN p_released THEN NULL ELSE c.batch_end END,
        retry_count = p_retry,
        retry_not_before = p_retry_not_before,
        messages_consumed = c.messages_consumed + (p_cursor - c.cursor),
        last_consumed_at = CASE WHEN p_cursor > c.cursor THEN p_now ELSE c.last_consumed_at END,
        batches_consumed = c.batches_consumed
            + CASE WHEN p_released AND p_cursor >= coalesce(c.batch_end, 0) THEN 1 ELSE 0 END
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND (p_cursor <> c.cursor OR p_released OR p_retry <> c.retry_count);
    IF p_released AND p_cursor > p_old_cursor THEN
        UPDATE partition_work w SET next_at = m.created_at
        FROM (SELECT m.created_at FROM messages m WHERE m.partition_id = p_pid AND m.position > p_cursor
              ORDER BY m.position LIMIT 1) m
        WHERE w.partition_id = p_pid AND w.consumer_group = p_group;
        IF NOT FOUND THEN
            -- Nothing after the batch: the pair leaves the work index now, not on some pop's
            -- next walk. qg_clear_work never waits for a lock, so holding the consumer row
            -- here cannot deadlock.
            PERFORM qg_clear_work(p_pid, p_group, p_cursor);
        END IF;
    END IF;
END $$;

-- The verdict on one ack item (docs/api/concepts.md §8.3), returned by qg_ack_batch_fast and
-- qg_ack_items and read by qg_transaction.
CREATE TYPE qg_ack_result AS (
    i                 integer,
    success           boolean,
    error             text,
    queue_name        text,
    partition_name    text,
    lease_released    boolean,
    dlq               boolean,
    already_committed boolean
);

-- The common ack, decided set-based: every item completes a message of one pair's live
-- leased batch under that lease (a consumer acknowledging what it popped). Returns the
-- results, or nothing when the call is anything else: the caller then evaluates it item by
-- item, with the same outcome for this case. Locks the pair's consumer row.
CREATE OR REPLACE FUNCTION qg_ack_batch_fast(
    p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[], p_leases uuid[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_q        record;
    v_c        consumers%ROWTYPE;
    v_n        integer;
    v_max      bigint;
    v_released boolean;
BEGIN
    -- coalesce: an element that is NULL (no partition, no lease) must send the call down the
    -- item-by-item path, not drop out of bool_and as NULLs do.
    IF p_leases[1] IS NULL OR NOT (SELECT bool_and(coalesce(u.pid = p_pids[1] AND u.grp = p_groups[1]
                                                            AND u.st = 'completed' AND u.lease = p_leases[1], false))
                                   FROM unnest(p_pids, p_groups, p_statuses, p_leases) AS u (pid, grp, st, lease)) THEN
        RETURN;
    END IF;
    SELECT q.name AS qname, p.name AS pname INTO v_q
    FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = p_pids[1];
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO v_c FROM consumers c
    WHERE c.partition_id = p_pids[1] AND c.consumer_group = p_groups[1] FOR UPDATE;
    IF NOT FOUND OR v_c.lease_id IS DISTINCT FROM p_leases[1] OR v_c.lease_expires_at <= p_now
       OR v_c.batch_end IS NULL THEN
        RETURN;
    END IF;
    -- One range scan of the leased batch, matched by key, instead of a key lookup per item.
    SELECT count(m.position), max(m.position) INTO v_n, v_max
    FROM unnest(p_keys) AS u (k)
    JOIN (SELECT m.position, m.transaction_id FROM messages m
          WHERE m.partition_id = p_pids[1] AND m.position > v_c.cursor AND m.position <= v_c.batch_end) m
      ON m.transaction_id = u.k;
    IF v_n < cardinality(p_keys) THEN
        RETURN; -- a key not found, already committed or beyond the batch
    END IF;
    v_released := v_max >= v_c.batch_end;
    PERFORM qg_ack_settle(p_pids[1], p_groups[1], v_c.cursor, v_max,
                          CASE WHEN v_released THEN 0 ELSE v_c.retry_count END, v_c.retry_not_before,
                          v_released, p_now);
    RETURN QUERY SELECT (g.i - 1)::int, true, NULL::text, v_q.qname::text, v_q.pname::text, v_released, false, false
    FROM generate_series(1, cardinality(p_keys)) AS g (i);
END $$;

-- The common single-message ack in one guarded UPDATE (docs/api/concepts.md §8.2): a completed
-- ack of the message at the end of its pair's outstanding batch, under the pair's live lease,
-- completes the batch and releases the lease. p_leases are the leases the ack may be checked
-- against (the item's own, or a transaction's requiredLeases); NULL: a lease-less ack, no
-- check. The lease, the batch and the position are all checked in the UPDATE's WHERE, so a
-- concurrent claim, ack, expiry or seek leaves the row unmatched rather than overwritten.
-- Returns false, having changed nothing, for any other case: the caller then takes the general
-- path (qg_ack_items), which decides it with the same outcome for this one.
CREATE OR REPLACE FUNCTION qg_ack_batch_end(
    p_pid uuid, p_group text, p_pos bigint, p_leases uuid[], p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
BEGIN
    UPDATE consumers c SET
        cursor = p_pos, lease_id = NULL, lease_expires_at = NULL, batch_end = NULL, retry_count = 0,
        messages_consumed = c.messages_consumed + (p_pos - c.cursor),
        last_consumed_at = v_now, batches_consumed = c.batches_consumed + 1
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND c.batch_end = p_pos AND c.cursor < p_pos -- an ordinary batch (a requeue batch ends at or below the cursor)
      AND (p_leases IS NULL OR (c.lease_id = ANY (p_leases) AND c.lease_expires_at > v_now));
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- The work index, as qg_ack_settle does for a completed batch.
    UPDATE partition_work w SET next_at = m.created_at
    FROM (SELECT m.created_at FROM messages m WHERE m.partition_id = p_pid AND m.position > p_pos
          ORDER BY m.position LIMIT 1) m
    WHERE w.partition_id = p_pid AND w.consumer_group = p_group;
    IF NOT FOUND THEN
        PERFORM qg_clear_work(p_pid, p_group, p_pos);
    END IF;
    RETURN true;
END $$;

-- POST /api/v1/ack of one item: qg_ack_batch_end when it applies (one statement finds the
-- message and its names, one settles the pair), else qg_ack_items. Same results as
-- qg_ack_items.
CREATE OR REPLACE FUNCTION qg_ack_one(
    p_pid uuid, p_key text, p_group text, p_status text, p_lease uuid, p_error text, p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql AS $$
DECLARE
    v_m record;
BEGIN
    IF p_status = 'completed' AND p_pid IS NOT NULL THEN
        SELECT m.position, q.name AS qname, p.name AS pname INTO v_m
        FROM messages m
        JOIN partitions p ON p.id = p_pid
        JOIN queues q ON q.id = p.queue_id
        WHERE m.partition_id = p_pid AND m.transaction_id = p_key;
        IF FOUND AND qg_ack_batch_end(p_pid, p_group, v_m.position,
                                      CASE WHEN p_lease IS NOT NULL THEN ARRAY[p_lease] END, p_now) THEN
            RETURN NEXT ROW(0, true, NULL::text, v_m.qname, v_m.pname, true, false, false)::qg_ack_result;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM qg_ack_items(ARRAY[p_pid], ARRAY[p_key], ARRAY[p_group], ARRAY[p_status],
                                           ARRAY[p_lease], ARRAY[p_error], NULL, p_now);
END $$;

-- One ack item as qg_ack_items evaluates it: the item, its message's position, the start state
-- of its pair (consumer row read under its lock), its effect, and its pair's outcome (carried on
-- every item of the pair, so that no step joins one item list to another).
CREATE TYPE qg_ack_eval AS (
    i            integer,     -- 0-based item index
    pid          uuid,
    grp          text,
    pos          bigint,      -- NULL: no such message
    st           text,
    err          text,
    eff          text,        -- QG004 | QG005 | QG006 | committed | complete | dlq | release | noop
    qname        text,
    pname        text,
    has          boolean,     -- the pair has a consumer row
    cursor0      bigint,
    retry0       integer,
    batch_end    bigint,
    cursor1      bigint,      -- the pair's cursor afterwards
    retry1       integer,
    rnb1         timestamptz, -- retry_not_before afterwards
    released     boolean,     -- the lease ends (release point or batch completed)
    live1        boolean      -- the pair holds a live lease afterwards
);

-- Evaluates and applies ack items (docs/api/concepts.md §8.2), shared by the ack routes and the
-- transaction route. Items naming the same (partition, group) form an ack group, evaluated
-- under that pair's row lock against the state at the start; the consumer rows are locked in
-- ascending (partition id, group) order, the order of every write path.
--
-- p_statuses are normalised: completed | failed | retry | dlq. A NULL p_leases element is a
-- lease-less ack unless p_required (the transaction's requiredLeases) resolves one (docs/api/transaction.md §4).
-- Never raises for a rejected item: the caller decides (the ack route reports, a transaction
-- rolls back).
--
-- Set-based, so that the cost grows linearly with the items whatever their mix of pairs
-- (docs/api/operations.md §9.4): one statement locks every pair's consumer row in order, one evaluates
-- every item (window functions per pair, in position order), then one writes the DLQ rows, one
-- the consumer rows, two the work index. No statement runs per pair or per item, and no step
-- joins the item list to another array (a nested loop over two arrays is quadratic).
CREATE OR REPLACE FUNCTION qg_ack_items(
    p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[], p_leases uuid[],
    p_errors text[], p_required uuid[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now      timestamptz := coalesce(p_now, clock_timestamp());
    v_required uuid[] := (SELECT array_agg(DISTINCT r) FROM unnest(p_required) r WHERE r IS NOT NULL);
    v_eval     qg_ack_eval[];
BEGIN
    p_pids := qg_visible_pids(p_pids); -- another tenant's partition is no partition
    IF v_required IS NULL THEN
        RETURN QUERY SELECT * FROM qg_ack_batch_fast(p_pids, p_keys, p_groups, p_statuses, p_leases, v_now);
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;

    -- The pairs' consumer rows, locked in ascending (partition, group) order (the sort sits
    -- below the row locking). Later statements read them from the table: held, they cannot move.
    -- A pair whose outstanding batch is a requeue batch (docs/api/concepts.md §9.3; it ends at
    -- or below the cursor, which the probe needs only then) is read with the requeue readings
    -- of §8.2: qg_ack_split sends its items to qg_ack_requeue and the rest back here.
    IF (SELECT coalesce(bool_or(x.rq), false) FROM (
            SELECT coalesce(c.batch_end <= c.cursor, false) AND qg_requeue_batch(c.partition_id, c.consumer_group) AS rq
            FROM consumers c
            WHERE (c.partition_id, c.consumer_group) IN (SELECT u.pid, u.grp FROM unnest(p_pids, p_groups) AS u (pid, grp))
            ORDER BY c.partition_id, c.consumer_group
            FOR UPDATE) x) THEN
        RETURN QUERY SELECT * FROM qg_ack_split(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors, p_required, v_now);
        RETURN;
    END IF;

    -- Every item evaluated at once (docs/api/concepts.md §8.2-8.3). Within a pair, items are taken in
    -- ascending position (ties in request order); a rejected item's checks use only the start
    -- state, so the order does not change them. The first item that releases the lease (failed
    -- with retries left, or retry) is the release point: items after it succeed without effect.
    -- Before it the retry count is the start one, so each item's effect is known from the start
    -- state and its rank alone.
    --
    -- One sort by pair feeds two window levels (no materialised steps: each pass over 10,000
    -- wide rows costs tens of milliseconds). An item's place in its pair is its key (position,
    -- request order); rp is the key of the pair's release point.
    SELECT array_agg(ROW(z.i, z.pid, z.grp, z.pos, z.st, z.err, z.eff, z.qname, z.pname, z.has,
                         z.cursor0, z.retry0, z.batch_end, z.cursor1,
                         CASE WHEN z.dlq_any THEN 0
                              WHEN z.rp IS NOT NULL THEN z.retry0 + CASE WHEN z.rp_failed THEN 1 ELSE 0 END
                              WHEN z.released THEN 0 -- the batch completed
                              ELSE z.retry0 END,
                         CASE WHEN z.rp_failed THEN v_now + z.retry_delay * interval '1 millisecond'
                              ELSE z.retry_not_before END,
                         z.released, z.live0 AND NOT z.released)::qg_ack_eval)
    INTO v_eval
    FROM (
        SELECT y.*, y.has AND (y.rp IS NOT NULL OR (y.batch_end IS NOT NULL AND y.cursor1 >= y.batch_end)) AS released
        FROM (
            SELECT x.*,
                   CASE WHEN x.act NOT IN ('complete', 'dlq', 'release') THEN x.act
                        WHEN x.rp IS NULL OR x.key < x.rp THEN x.act
                        WHEN x.key = x.rp THEN 'release'
                        ELSE 'noop' -- after a release point: success, no effect, delivered again
                   END AS eff,
                   greatest(x.cursor0, max(x.pos) FILTER (WHERE x.act IN ('complete', 'dlq')
                                                          AND (x.rp IS NULL OR x.key < x.rp)) OVER pair) AS cursor1,
                   coalesce(bool_or(x.act = 'dlq' AND (x.rp IS NULL OR x.key < x.rp)) OVER pair, false) AS dlq_any,
                   coalesce(bool_or(x.key = x.rp AND x.st = 'failed') OVER pair, false) AS rp_failed
            FROM (
                SELECT w.*, min(CASE WHEN w.act = 'release' THEN w.key END) OVER pair AS rp
                FROM (
                    SELECT it.*, ARRAY[it.pos, it.ord] AS key,
                           CASE
                               WHEN it.pos IS NULL THEN 'QG004' -- codes only: Go holds the texts (mq.Code)
                               WHEN it.pos <= it.cursor0 THEN 'committed'
                               WHEN it.lease IS NOT NULL AND NOT coalesce(it.live0 AND it.lease = it.lease_id, false) THEN 'QG005'
                               WHEN it.batch_end IS NULL OR it.pos > it.batch_end THEN 'QG006'
                               WHEN it.st = 'completed' THEN 'complete'
                               WHEN it.st = 'dlq' OR (it.st = 'failed' AND it.retry0 >= it.retry_limit) THEN 'dlq'
                               ELSE 'release' -- failed with retries left, or retry
                           END AS act
                    FROM (
                        SELECT (u.ord - 1)::int AS i, u.pid, u.grp, u.st, u.err, u.ord,
                               -- the item's lease; a lease-less item of a transaction takes one of its
                               -- required leases
                               CASE WHEN u.lease IS NULL AND v_required IS NOT NULL THEN CASE
                                        WHEN c.lease_id = ANY (v_required) THEN c.lease_id
                                        WHEN cardinality(v_required) = 1 THEN v_required[1]
                                        ELSE '00000000-0000-0000-0000-000000000000'::uuid END
                                    ELSE u.lease END AS lease,
                               -- The message's position: found in its pair's leased batch (below), else
                               -- looked up by key (unknown, committed or beyond the batch).
                               CASE WHEN u.batch_pos IS NOT NULL THEN u.batch_pos
                                    ELSE (SELECT m.position FROM messages m
                                          WHERE m.partition_id = u.pid AND m.transaction_id = u.k) END AS pos,
                               q.name AS qname, p.name AS pname, q.retry_limit, q.retry_delay,
                               c.partition_id IS NOT NULL AS has, c.lease_id,
                               coalesce(c.lease_id IS NOT NULL AND c.lease_expires_at > v_now, false) AS live0,
                               coalesce(c.cursor, 0) AS cursor0, coalesce(c.retry_count, 0) AS retry0,
                               c.batch_end, c.retry_not_before
                        FROM (
                            -- Items meet the messages of their pairs' leased batches in one sort by
                            -- (partition, key), a range scan of each batch, instead of a key lookup
                            -- per item: with few messages per partition on average, a generic plan
                            -- may serve that lookup by the (partition, position) index with a filter
                            -- on the key, a scan of the whole partition per item.
                            SELECT v.*, max(v.mpos) OVER (PARTITION BY v.pid, v.k COLLATE "C") AS batch_pos
                            FROM (
                                SELECT u.pid, u.k, u.grp, u.st, u.lease, u.err, u.ord, NULL::bigint AS mpos
                                FROM unnest(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors)
                                     WITH ORDINALITY AS u (pid, k, grp, st, lease, err, ord)
                                UNION ALL
                                SELECT b.pid, bm.transaction_id, NULL, NULL, NULL, NULL, NULL, bm.position
                                FROM (SELECT DISTINCT d.pid, d.grp FROM unnest(p_pids, p_groups) AS d (pid, grp)) b
                                CROSS JOIN LATERAL (
                                    SELECT m.position, m.transaction_id
                                    FROM consumers bc
                                    JOIN messages m ON m.partition_id = bc.partition_id
                                     AND m.position > bc.cursor AND m.position <= bc.batch_end
                                    WHERE bc.partition_id = b.pid AND bc.consumer_group = b.grp
                                    OFFSET 0) bm
                            ) v
                        ) u
                        -- Partition rows are updated by every push: reached through the primary key
                        -- (= ANY), never a scan over their dead versions.
                        LEFT JOIN (SELECT * FROM partitions WHERE id = ANY (p_pids)) p ON p.id = u.pid
                        LEFT JOIN queues q ON q.id = p.queue_id
                        -- one primary-key lookup per item (LIMIT 1 keeps it a lookup whatever the estimates)
                        LEFT JOIN LATERAL (SELECT * FROM consumers c WHERE c.partition_id = u.pid AND c.consumer_group = u.grp
                                           LIMIT 1) c ON q.id IS NOT NULL
                        WHERE u.ord IS NOT NULL -- the items, not the batches' messages
                        OFFSET 0 -- evaluated once per item, not once per use of pos
                    ) it
                ) w
                WINDOW pair AS (PARTITION BY w.pid, w.grp)
            ) x
            WINDOW pair AS (PARTITION BY x.pid, x.grp)
        ) y
    ) z;

    -- DLQ rows (docs/api/concepts.md §9), in the order the items were applied.
    INSERT INTO dlq (id, queue_id, partition_id, queue_name, partition_name, consumer_group,
                     message_id, transaction_id, error_message, retry_count, payload, trace_id,
                     producer_sub, encrypted, created_at, failed_at)
    SELECT gen_random_uuid(), q.id, p.id, q.name, p.name, e.grp, m.id, m.transaction_id,
           coalesce(nullif(e.err, ''), CASE e.st WHEN 'dlq' THEN 'Moved to DLQ' ELSE 'Retries exhausted' END),
           e.retry0, m.payload, m.trace_id, m.producer_sub, m.encrypted, m.created_at, v_now
    FROM unnest(v_eval) e
    JOIN messages m ON m.partition_id = e.pid AND m.position = e.pos
    JOIN partitions p ON p.id = m.partition_id
    JOIN queues q ON q.id = p.queue_id
    WHERE e.eff = 'dlq'
    ORDER BY e.pid, e.grp, e.pos, e.i;

    -- The consumer rows (held since the start): new cursor, retry count and delay, and the end
    -- of the lease for released pairs (qg_ack_settle, for every pair at once).
    UPDATE consumers c SET
        cursor = s.cursor1,
        lease_id = CASE WHEN s.released THEN NULL ELSE c.lease_id END,
        lease_expires_at = CASE WHEN s.released THEN NULL ELSE c.lease_expires_at END,
        batch_end = CASE WHEN s.released THEN NULL ELSE c.batch_end END,
        retry_count = s.retry1,
        retry_not_before = s.rnb1,
        messages_consumed = c.messages_consumed + (s.cursor1 - c.cursor),
        last_consumed_at = CASE WHEN s.cursor1 > c.cursor THEN v_now ELSE c.last_consumed_at END,
        batches_consumed = c.batches_consumed
            + CASE WHEN s.released AND s.cursor1 >= coalesce(c.batch_end, 0) THEN 1 ELSE 0 END
    FROM (SELECT DISTINCT ON (e.pid, e.grp) e.pid, e.grp, e.cursor1, e.retry1, e.rnb1, e.released
          FROM unnest(v_eval) e WHERE e.has ORDER BY e.pid, e.grp) s
    WHERE c.partition_id = s.pid AND c.consumer_group = s.grp
      AND (s.cursor1 <> c.cursor OR s.released OR s.retry1 <> c.retry_count);

    -- A completed batch reorders its pair in the work index by the next message; a pair with
    -- nothing after its batch leaves the index now, as qg_clear_work does (its share locks never
    -- wait, so holding the consumer rows cannot deadlock; the consumer row it re-checks is ours,
    -- at the cursor just written). Work rows are locked in ascending pair order first.
    PERFORM qg_ack_rework(array_agg(s.pid ORDER BY s.pid, s.grp), array_agg(s.grp ORDER BY s.pid, s.grp),
                          array_agg(s.cursor1 ORDER BY s.pid, s.grp))
    FROM (SELECT DISTINCT ON (e.pid, e.grp) e.pid, e.grp, e.cursor1
          FROM unnest(v_eval) e
          WHERE e.has AND e.released AND e.cursor1 > e.cursor0
          ORDER BY e.pid, e.grp) s
    HAVING count(*) > 0;

    RETURN QUERY
        SELECT e.i, e.eff NOT IN ('QG004', 'QG005', 'QG006'),
               CASE WHEN e.eff IN ('QG004', 'QG005', 'QG006') THEN e.eff END,
               e.qname, e.pname, NOT e.live1, e.eff = 'dlq', e.eff = 'committed'
        FROM unnest(v_eval) e
        ORDER BY e.i;
END $$;

-- The work index after acks that completed batches (qg_ack_items): for each (partition, group,
-- new cursor), next_at moves to the message after the cursor, or, with nothing after it, the
-- pair leaves the index when the partition's share lock is free (qg_clear_work). The caller
-- holds the pairs' consumer rows; pairs come in ascending order.
CREATE OR REPLACE FUNCTION qg_ack_rework(p_pids uuid[], p_groups text[], p_cursors bigint[])
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_pids uuid[];
    v_groups text[];
    v_cursors bigint[];
BEGIN
    PERFORM 1 FROM partition_work w
    WHERE (w.partition_id, w.consumer_group) IN (SELECT u.pid, u.grp FROM unnest(p_pids, p_groups) AS u (pid, grp))
    ORDER BY w.partition_id, w.consumer_group
    FOR UPDATE;

    WITH nxt AS MATERIALIZED (
        SELECT u.pid, u.grp, u.cur,
               (SELECT m.created_at FROM messages m WHERE m.partition_id = u.pid AND m.position > u.cur
                ORDER BY m.position LIMIT 1) AS next_at
        FROM unnest(p_pids, p_groups, p_cursors) AS u (pid, grp, cur)
    ), moved AS (
        UPDATE partition_work w SET next_at = n.next_at
        FROM nxt n
        WHERE n.next_at IS NOT NULL AND w.partition_id = n.pid AND w.consumer_group = n.grp
    ), tops AS MATERIALIZED (
        SELECT n.pid, n.grp, n.cur FROM nxt n
        JOIN partitions p ON p.id = n.pid
        WHERE n.next_at IS NULL
        ORDER BY p.id
        FOR SHARE OF p SKIP LOCKED
    )
    SELECT array_agg(t.pid), array_agg(t.grp), array_agg(t.cur) INTO v_pids, v_groups, v_cursors FROM tops t;

    -- The heads are read in a statement after the share locks: its snapshot sees every writer's
    -- commit up to the lock (the locking statement's snapshot may be older).
    DELETE FROM partition_work w
    USING unnest(v_pids, v_groups, v_cursors) AS t (pid, grp, cur)
    JOIN partition_heads h ON h.partition_id = t.pid
    WHERE t.cur >= h.last_position AND w.partition_id = t.pid AND w.consumer_group = t.grp
      -- a pair with a requeued set stays listed (docs/api/concepts.md §9.3)
      AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = t.pid AND r.consumer_group = t.grp);
END $$;

-- Several ack requests in one transaction (docs/design.md, "Group commit for consumers"): the
-- broker merges acks that wait for the database into one call, so one commit carries many.
-- Request r is items p_starts[r] .. p_starts[r+1]-1 (1-based; the last runs to the end), and
-- is applied exactly as alone (qg_ack_one for one item, qg_ack_items for more), one request
-- after another: a later request sees what an earlier one did, as it would after its commit.
-- Returned i is the item's 0-based index in the flattened arrays.
--
-- Requests applied in turn keep the locks of the ones before, so a later request locking a
-- lower pair would break the ascending (partition, group) order of every write path and could
-- deadlock with another such call. Every pair of the call is locked first, in that order, in
-- one statement; the requests then only take locks they hold.
CREATE OR REPLACE FUNCTION qg_ack_many(
    p_starts integer[], p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[],
    p_leases uuid[], p_errors text[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_lo  integer;
    v_hi  integer;
BEGIN
    -- Another tenant's pairs are not locked (the join to the scoped view queues leaves them
    -- out), and each request's own function answers their items as unknown: qg_ack_one finds
    -- no message through queues, qg_ack_items checks its partitions (qg_visible_pids) — per
    -- request, where a batch names one partition, not over the merged arrays.
    PERFORM 1 FROM consumers c JOIN queues q ON q.id = c.queue_id
    WHERE (c.partition_id, c.consumer_group) IN (SELECT u.pid, u.grp FROM unnest(p_pids, p_groups) AS u (pid, grp))
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c;
    FOR r IN 1 .. cardinality(p_starts) LOOP
        v_lo := p_starts[r];
        v_hi := coalesce(p_starts[r + 1], cardinality(p_pids) + 1) - 1;
        IF v_lo = v_hi THEN
            RETURN QUERY SELECT v_lo - 1 + x.i, x.success, x.error, x.queue_name, x.partition_name,
                                x.lease_released, x.dlq, x.already_committed
                FROM qg_ack_one(p_pids[v_lo], p_keys[v_lo], p_groups[v_lo], p_statuses[v_lo], p_leases[v_lo],
                                p_errors[v_lo], v_now) x;
        ELSIF v_lo < v_hi THEN
            RETURN QUERY SELECT v_lo - 1 + x.i, x.success, x.error, x.queue_name, x.partition_name,
                                x.lease_released, x.dlq, x.already_committed
                FROM qg_ack_items(p_pids[v_lo:v_hi], p_keys[v_lo:v_hi], p_groups[v_lo:v_hi], p_statuses[v_lo:v_hi],
                                  p_leases[v_lo:v_hi], p_errors[v_lo:v_hi], NULL, v_now) x;
        END IF;
    END LOOP;
END $$;
