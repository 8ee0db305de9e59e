-- The requeued set on the data path (docs/api/concepts.md §9.3; table requeued, migration 0006).
--
-- A pair whose set is not empty is served from it first: qg_claim hands the claim to
-- qg_claim_requeued, which delivers only requeued messages, in position order, up to the
-- budget: a requeue batch. Its batch end is its last message, at or below the cursor (a normal
-- batch ends after it); its messages are the rows marked in_batch, which only a requeue claim
-- sets and every claim or release of the pair resets, so a pair holds a requeue batch exactly
-- when its batch end is set and it has such rows (qg_requeue_batch). qg_ack_items sends the
-- items of such pairs to qg_ack_requeue, which applies the requeue readings of §8.2.

-- Whether the pair's outstanding batch is a requeue batch (the caller read batch_end set).
CREATE OR REPLACE FUNCTION qg_requeue_batch(p_pid uuid, p_group text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.in_batch);
$$;

-- Lists a pair in the work index by what it serves next (the caller holds its consumer row):
-- the oldest message of its requeued set, else the message after its cursor; with neither,
-- the pair leaves the index as qg_clear_work decides.
CREATE OR REPLACE FUNCTION qg_requeue_rework(p_pid uuid, p_group text)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_cursor bigint;
    v_next   timestamptz;
BEGIN
    SELECT c.cursor INTO v_cursor FROM consumers c WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_next := coalesce(
        (SELECT min(m.created_at) FROM requeued r
         JOIN messages m ON m.partition_id = r.partition_id AND m.position = r.position
         WHERE r.partition_id = p_pid AND r.consumer_group = p_group),
        (SELECT m.created_at FROM messages m WHERE m.partition_id = p_pid AND m.position > v_cursor
         ORDER BY m.position LIMIT 1));
    IF v_next IS NULL THEN
        PERFORM qg_clear_work(p_pid, p_group, v_cursor);
        RETURN;
    END IF;
    INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
    SELECT p_pid, p_group, p.queue_id, v_next FROM partitions p WHERE p.id = p_pid
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET next_at = EXCLUDED.next_at;
END $$;

-- Claims a pair from its requeued set (docs/api/concepts.md §9.3): qg_claim calls it holding the
-- consumer row, the pair deliverable by conditions 1-3 of §6.1 (delayedProcessing and
-- windowBuffer do not hold requeued messages back). A batch whose lease expired is served
-- again: its marks are reset first. With p_auto_ack the delivered messages leave the set at
-- once; otherwise they are leased as the pair's requeue batch. Pops report the batch's rq.
CREATE OR REPLACE FUNCTION qg_claim_requeued(
    p_pid uuid, p_group text, p_budget integer, p_auto_ack boolean, p_lease_id uuid,
    p_lease_time integer, p_pname text, p_qname text, p_now timestamptz)
RETURNS SETOF qg_popped LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_pos bigint[];
    v_rq  integer;
BEGIN
    UPDATE requeued r SET in_batch = false
    WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.in_batch;
    WITH pick AS (
        SELECT r.position FROM requeued r
        WHERE r.partition_id = p_pid AND r.consumer_group = p_group
        ORDER BY r.position LIMIT p_budget
    ), marked AS (
        UPDATE requeued r SET in_batch = true FROM pick
        WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.position = pick.position
        RETURNING r.position, r.rq
    )
    SELECT array_agg(m.position ORDER BY m.position), max(m.rq) INTO v_pos, v_rq FROM marked m;
    IF v_pos IS NULL THEN
        RETURN;
    END IF;

    IF p_auto_ack THEN
        DELETE FROM requeued r
        WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.position = ANY (v_pos);
        UPDATE consumers c SET lease_id = NULL, lease_expires_at = NULL, batch_end = NULL,
            messages_consumed = c.messages_consumed + cardinality(v_pos),
            batches_consumed = c.batches_consumed + 1, last_consumed_at = p_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        PERFORM qg_requeue_rework(p_pid, p_group);
    ELSE
        UPDATE consumers c SET lease_id = p_lease_id,
            lease_expires_at = p_now + CASE p_lease_time WHEN 0 THEN 60 ELSE p_lease_time END
                                       * interval '1 second',
            batch_end = v_pos[cardinality(v_pos)]
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    END IF;

    RETURN QUERY
    SELECT m.id, m.transaction_id, m.trace_id, m.payload::text, m.producer_sub, m.created_at,
           m.partition_id, p_pname, p_qname, v_rq, m.encrypted
    FROM messages m
    WHERE m.partition_id = p_pid AND m.position = ANY (v_pos)
    ORDER BY m.position;
END $$;

-- Splits an ack call whose pairs include an outstanding requeue batch (qg_ack_items found one
-- under the consumer-row locks it holds): the items of those pairs go to qg_ack_requeue, the
-- others through qg_ack_items again (which then finds none), and the results come back in item
-- order with their original indexes. Linear: one pass to split, one call each.
CREATE OR REPLACE FUNCTION qg_ack_split(
    p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[], p_leases uuid[],
    p_errors text[], p_required uuid[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql AS $$
DECLARE
    v_rq boolean[];
BEGIN
    SELECT array_agg(coalesce(c.batch_end <= c.cursor, false) AND qg_requeue_batch(u.pid, u.grp) ORDER BY u.ord) INTO v_rq
    FROM unnest(p_pids, p_groups) WITH ORDINALITY AS u (pid, grp, ord)
    LEFT JOIN LATERAL (SELECT c.batch_end, c.cursor FROM consumers c
                       WHERE c.partition_id = u.pid AND c.consumer_group = u.grp LIMIT 1) c ON true;

    RETURN QUERY
    WITH normal AS (
        SELECT u.*, row_number() OVER (ORDER BY u.ord) AS sub
        FROM unnest(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors, v_rq)
             WITH ORDINALITY AS u (pid, k, grp, st, lease, err, rq, ord)
        WHERE NOT u.rq
    ), normal_res AS (
        SELECT r.* FROM (
            SELECT array_agg(n.pid ORDER BY n.sub) AS pids, array_agg(n.k ORDER BY n.sub) AS ks,
                   array_agg(n.grp ORDER BY n.sub) AS grps, array_agg(n.st ORDER BY n.sub) AS sts,
                   array_agg(n.lease ORDER BY n.sub) AS leases, array_agg(n.err ORDER BY n.sub) AS errs
            FROM normal n HAVING count(*) > 0) a
        CROSS JOIN LATERAL qg_ack_items(a.pids, a.ks, a.grps, a.sts, a.leases, a.errs, p_required, p_now) r
    ), rq AS (
        SELECT u.* FROM unnest(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors, v_rq)
             WITH ORDINALITY AS u (pid, k, grp, st, lease, err, rq, ord)
        WHERE u.rq
    ), rq_res AS (
        SELECT r.* FROM (
            SELECT array_agg(x.pid ORDER BY x.ord) AS pids, array_agg(x.k ORDER BY x.ord) AS ks,
                   array_agg(x.grp ORDER BY x.ord) AS grps, array_agg(x.st ORDER BY x.ord) AS sts,
                   array_agg(x.lease ORDER BY x.ord) AS leases, array_agg(x.err ORDER BY x.ord) AS errs,
                   array_agg((x.ord - 1)::int ORDER BY x.ord) AS idx
            FROM rq x HAVING count(*) > 0) a
        CROSS JOIN LATERAL qg_ack_requeue(a.pids, a.ks, a.grps, a.sts, a.leases, a.errs, a.idx, p_required, p_now) r
    )
    SELECT (n.ord - 1)::int, r.success, r.error, r.queue_name, r.partition_name, r.lease_released, r.dlq,
           r.already_committed
    FROM normal_res r JOIN normal n ON n.sub = r.i + 1
    UNION ALL
    SELECT * FROM rq_res
    ORDER BY 1;
END $$;

-- Acks on pairs with an outstanding requeue batch (docs/api/concepts.md §8.2, the requeue
-- readings; §9.3). The caller holds the pairs' consumer rows. p_idx are the items' indexes in
-- the caller's call. Per item: a) no message: Message not found; b) at or below the cursor and
-- not in the batch: already committed; c) lease-checked against another lease; d) not in the
-- batch: beyond the leased batch; else valid. Valid items apply in position order (ties in
-- request order): completed takes the message and the batch's earlier ones out of the set; dlq
-- and failed with rq >= retryLimit also write a DLQ entry (retryCount rq); failed with retries
-- left and retry are the release point: the lease ends, the remaining messages stay in the set
-- (failed: rq + 1 and the pair's retry delay). The batch completes when none of its messages is
-- left in the set; a DLQ entry resets the remaining messages' rq. The cursor never moves.
-- Requeue batches are rare: this walks the items once, sorted by pair and position.
CREATE OR REPLACE FUNCTION qg_ack_requeue(
    p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[], p_leases uuid[],
    p_errors text[], p_idx integer[], p_required uuid[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql AS $$
DECLARE
    v_now      timestamptz := coalesce(p_now, clock_timestamp());
    v_required uuid[] := (SELECT array_agg(DISTINCT r) FROM unnest(p_required) r WHERE r IS NOT NULL);
    v_it       record;
    v_pid      uuid;
    v_grp      text;
    v_c        consumers%ROWTYPE;
    v_q        record;
    v_live     boolean;
    v_rq       integer;
    v_upto     bigint;    -- the batch's messages up to here leave the set
    v_rp       text;      -- the release point's status (failed | retry), NULL: none yet
    v_dlq      boolean;
    v_lease    uuid;
    v_eff      text;
    v_res      qg_ack_result[] := '{}';
    v_pair     integer[] := '{}'; -- indexes into v_res of the current pair's items
    v_released boolean;
    v_left     integer;
BEGIN
    FOR v_it IN
        SELECT u.*, (SELECT m.position FROM messages m WHERE m.partition_id = u.pid AND m.transaction_id = u.k) AS pos
        FROM unnest(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors, p_idx)
             WITH ORDINALITY AS u (pid, k, grp, st, lease, err, i, ord)
        ORDER BY u.pid, u.grp, 9, u.ord
    LOOP
        IF v_pid IS DISTINCT FROM v_it.pid OR v_grp IS DISTINCT FROM v_it.grp THEN
            IF v_pid IS NOT NULL THEN
                PERFORM qg_ack_requeue_settle(v_c, v_rq, v_upto, v_rp, v_dlq, v_q.retry_delay, v_now);
                v_released := NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = v_pid
                                          AND c.consumer_group = v_grp AND c.lease_id IS NOT NULL
                                          AND c.lease_expires_at > v_now);
                FOR v_left IN SELECT unnest(v_pair) LOOP
                    v_res[v_left].lease_released := v_released;
                END LOOP;
            END IF;
            v_pid := v_it.pid;
            v_grp := v_it.grp;
            v_pair := '{}';
            SELECT * INTO v_c FROM consumers c WHERE c.partition_id = v_pid AND c.consumer_group = v_grp;
            SELECT q.name AS qname, p.name AS pname, q.retry_limit, q.retry_delay INTO v_q
            FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = v_pid;
            v_live := v_c.lease_id IS NOT NULL AND v_c.lease_expires_at > v_now;
            SELECT coalesce(max(r.rq), 0) INTO v_rq FROM requeued r
            WHERE r.partition_id = v_pid AND r.consumer_group = v_grp AND r.in_batch;
            v_upto := NULL;
            v_rp := NULL;
            v_dlq := false;
        END IF;
        v_lease := CASE WHEN v_it.lease IS NULL AND v_required IS NOT NULL THEN CASE
                            WHEN v_c.lease_id = ANY (v_required) THEN v_c.lease_id
                            WHEN cardinality(v_required) = 1 THEN v_required[1]
                            ELSE '00000000-0000-0000-0000-000000000000'::uuid END
                        ELSE v_it.lease END;
        IF v_it.pos IS NULL THEN
            v_eff := 'QG004';
        ELSIF v_it.pos <= v_c.cursor AND NOT EXISTS (
                SELECT 1 FROM requeued r WHERE r.partition_id = v_pid AND r.consumer_group = v_grp
                  AND r.position = v_it.pos AND r.in_batch) THEN
            v_eff := 'committed';
        ELSIF v_lease IS NOT NULL AND NOT (v_live AND v_lease = v_c.lease_id) THEN
            v_eff := 'QG005';
        ELSIF v_it.pos > v_c.cursor THEN
            v_eff := 'QG006';
        ELSIF v_rp IS NOT NULL THEN
            v_eff := 'noop'; -- after the release point: delivered again
        ELSIF v_it.st = 'completed' THEN
            v_eff := 'complete';
        ELSIF v_it.st = 'dlq' OR (v_it.st = 'failed' AND v_rq >= v_q.retry_limit) THEN
            v_eff := 'dlq';
        ELSE
            v_eff := 'release';
        END IF;
        IF v_eff IN ('complete', 'dlq') THEN
            v_upto := greatest(v_upto, v_it.pos);
        END IF;
        IF v_eff = 'dlq' THEN
            v_dlq := true;
            PERFORM qg_dead_letter(v_pid, v_it.pos, v_grp,
                coalesce(nullif(v_it.err, ''), CASE v_it.st WHEN 'dlq' THEN 'Moved to DLQ' ELSE 'Retries exhausted' END),
                v_rq, v_now);
        ELSIF v_eff = 'release' THEN
            v_rp := v_it.st;
        END IF;
        v_res := v_res || ROW(v_it.i, v_eff NOT IN ('QG004', 'QG005', 'QG006'),
                              CASE WHEN v_eff IN ('QG004', 'QG005', 'QG006') THEN v_eff END,
                              v_q.qname, v_q.pname, false, v_eff = 'dlq', v_eff = 'committed')::qg_ack_result;
        v_pair := v_pair || cardinality(v_res);
    END LOOP;
    IF v_pid IS NOT NULL THEN
        PERFORM qg_ack_requeue_settle(v_c, v_rq, v_upto, v_rp, v_dlq, v_q.retry_delay, v_now);
        v_released := NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = v_pid
                                  AND c.consumer_group = v_grp AND c.lease_id IS NOT NULL
                                  AND c.lease_expires_at > v_now);
        FOR v_left IN SELECT unnest(v_pair) LOOP
            v_res[v_left].lease_released := v_released;
        END LOOP;
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_res) ORDER BY 1;
END $$;

-- Writes one pair's requeue-batch ack outcome (qg_ack_requeue; the caller holds the consumer
-- row p_c, read at the start): the batch's messages up to p_upto leave the set; a DLQ entry
-- resets the others' rq; a release point (p_rp) ends the lease and returns the remaining
-- messages to the set (failed: rq + 1 and the pair's retry-not-before); a batch with no message
-- left in the set completes. A released or completed batch relists the pair in the work index.
CREATE OR REPLACE FUNCTION qg_ack_requeue_settle(
    p_c consumers, p_rq integer, p_upto bigint, p_rp text, p_dlq boolean, p_retry_delay integer,
    p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_taken integer := 0;
    v_left  boolean;
BEGIN
    IF p_c.partition_id IS NULL OR p_c.batch_end IS NULL OR p_c.batch_end > p_c.cursor
       OR NOT qg_requeue_batch(p_c.partition_id, p_c.consumer_group) THEN
        RETURN; -- no requeue batch (every item was rejected or committed)
    END IF;
    IF p_upto IS NOT NULL THEN
        DELETE FROM requeued r WHERE r.partition_id = p_c.partition_id AND r.consumer_group = p_c.consumer_group
          AND r.in_batch AND r.position <= p_upto;
        GET DIAGNOSTICS v_taken = ROW_COUNT;
    END IF;
    v_left := EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_c.partition_id
                      AND r.consumer_group = p_c.consumer_group AND r.in_batch);
    IF p_rp IS NOT NULL OR NOT v_left THEN
        UPDATE requeued r SET in_batch = false,
            rq = CASE WHEN p_dlq THEN 0 WHEN p_rp = 'failed' THEN p_rq + 1 ELSE r.rq END
        WHERE r.partition_id = p_c.partition_id AND r.consumer_group = p_c.consumer_group AND r.in_batch;
        UPDATE consumers c SET lease_id = NULL, lease_expires_at = NULL, batch_end = NULL,
            retry_not_before = CASE WHEN p_rp = 'failed'
                                    THEN p_now + p_retry_delay * interval '1 millisecond'
                                    ELSE c.retry_not_before END,
            messages_consumed = c.messages_consumed + v_taken,
            batches_consumed = c.batches_consumed + CASE WHEN v_left THEN 0 ELSE 1 END,
            last_consumed_at = CASE WHEN v_taken > 0 THEN p_now ELSE c.last_consumed_at END
        WHERE c.partition_id = p_c.partition_id AND c.consumer_group = p_c.consumer_group;
        PERFORM qg_requeue_rework(p_c.partition_id, p_c.consumer_group);
    ELSIF v_taken > 0 THEN
        IF p_dlq THEN
            UPDATE requeued r SET rq = 0
            WHERE r.partition_id = p_c.partition_id AND r.consumer_group = p_c.consumer_group AND r.in_batch;
        END IF;
        UPDATE consumers c SET messages_consumed = c.messages_consumed + v_taken,
            last_consumed_at = CASE WHEN v_taken > 0 THEN p_now ELSE c.last_consumed_at END
        WHERE c.partition_id = p_c.partition_id AND c.consumer_group = p_c.consumer_group;
    END IF;
END $$;
