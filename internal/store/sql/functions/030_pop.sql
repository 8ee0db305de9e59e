-- Where a group's cursor starts on a partition it has no state on yet (concepts.md §5.3).
-- p_mode: 'all' (also queue mode), 'new' (p_at_registration: after the current last message,
-- otherwise from the first), 'timestamp' (before the first message created at or after p_ts).
CREATE OR REPLACE FUNCTION qg_initial_cursor(
    p_partition_id uuid, p_mode text, p_ts timestamptz, p_at_registration boolean)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p_mode = 'new' AND p_at_registration THEN
            (SELECT p.last_position FROM partitions p WHERE p.id = p_partition_id)
        WHEN p_mode = 'timestamp' THEN
            coalesce((SELECT m.position - 1 FROM messages m
                      WHERE m.partition_id = p_partition_id AND m.created_at >= p_ts
                      ORDER BY m.position LIMIT 1),
                     (SELECT p.last_position FROM partitions p WHERE p.id = p_partition_id))
        ELSE 0
    END;
$$;

-- Registers a named group on each queue it has not popped before: records the subscription
-- and gives the group a cursor on every partition that exists now. Later pops change nothing.
CREATE OR REPLACE FUNCTION qg_register(
    p_queue_ids uuid[], p_group text, p_mode text, p_ts timestamptz, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
BEGIN
    FOREACH v_qid IN ARRAY p_queue_ids LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM subscriptions s
                              WHERE s.queue_id = v_qid AND s.consumer_group = p_group);
        INSERT INTO subscriptions (queue_id, consumer_group, mode, subscription_timestamp, created_at)
        VALUES (v_qid, p_group, p_mode,
                CASE p_mode WHEN 'new' THEN p_now WHEN 'timestamp' THEN p_ts END, p_now)
        ON CONFLICT DO NOTHING;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
        SELECT p.id, p_group, p.queue_id, qg_initial_cursor(p.id, p_mode, p_ts, true)
        FROM partitions p WHERE p.queue_id = v_qid ORDER BY p.id
        ON CONFLICT DO NOTHING;
    END LOOP;
END $$;

-- A pop (concepts.md §6): claims up to p_max_partitions deliverable partitions of the matched
-- queues for p_group, oldest next message first (higher priority queues first), sharing a
-- budget of p_batch messages, and leases them under p_lease_id (or consumes them at once with
-- p_auto_ack). Contested partitions are skipped, never waited for.
CREATE OR REPLACE FUNCTION qg_pop(
    p_queue text, p_partition text, p_namespace text, p_task text, p_group text,
    p_batch integer, p_max_partitions integer, p_auto_ack boolean, p_lease_id uuid,
    p_sub_mode text, p_sub_ts timestamptz, p_now timestamptz)
RETURNS SETOF qg_popped LANGUAGE plpgsql AS $$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_qids    uuid[];
    v_cand    record;
    v_c       consumers%ROWTYPE;
    v_mode    text;
    v_ts      timestamptz;
    v_budget  integer := p_batch;
    v_claimed integer := 0;
    v_n       integer;
    v_last    bigint;
BEGIN
    SELECT array_agg(q.id) INTO v_qids FROM queues q
    WHERE (p_queue IS NULL OR q.name = p_queue)
      AND (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task);
    IF v_qids IS NULL THEN
        RETURN;
    END IF;
    IF p_group <> '__QUEUE_MODE__' THEN
        PERFORM qg_register(v_qids, p_group, p_sub_mode, p_sub_ts, v_now);
    END IF;

    FOR v_cand IN
        SELECT p.id AS pid, p.queue_id AS qid, p.name AS pname, q.name AS qname,
               q.lease_time, q.delayed_processing, c.partition_id IS NOT NULL AS has_state
        FROM partitions p
        JOIN queues q ON q.id = p.queue_id
        LEFT JOIN consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
        CROSS JOIN LATERAL (SELECT m.created_at FROM messages m
                            WHERE m.partition_id = p.id AND m.position > coalesce(c.cursor, 0)
                            ORDER BY m.position LIMIT 1) nm
        WHERE p.queue_id = ANY (v_qids)
          AND (p_partition IS NULL OR p.name = p_partition)
          AND p.last_position > coalesce(c.cursor, 0)
          AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
          AND (c.retry_not_before IS NULL OR c.retry_not_before <= v_now)
          AND (q.window_buffer = 0 OR p.last_message_at <= v_now - q.window_buffer * interval '1 second')
          AND nm.created_at <= v_now - q.delayed_processing * interval '1 second'
        ORDER BY q.priority DESC, nm.created_at, p.id
    LOOP
        EXIT WHEN v_budget <= 0 OR v_claimed >= p_max_partitions;
        IF NOT v_cand.has_state THEN
            v_mode := 'all';
            v_ts := NULL;
            IF p_group <> '__QUEUE_MODE__' THEN
                SELECT s.mode, s.subscription_timestamp INTO v_mode, v_ts FROM subscriptions s
                WHERE s.queue_id = v_cand.qid AND s.consumer_group = p_group;
            END IF;
            INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
            VALUES (v_cand.pid, p_group, v_cand.qid,
                    qg_initial_cursor(v_cand.pid, coalesce(v_mode, 'all'), v_ts, false))
            ON CONFLICT DO NOTHING;
        END IF;

        SELECT * INTO v_c FROM consumers c
        WHERE c.partition_id = v_cand.pid AND c.consumer_group = p_group
        FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        -- Re-check under the lock: another pop may have claimed it since the candidate scan.
        CONTINUE WHEN v_c.lease_expires_at > v_now OR v_c.retry_not_before > v_now;

        -- The visible messages after the cursor, up to the budget, stopping at the first one not
        -- visible yet (§6.1): after a clock step back a later message may look older, and it
        -- must not overtake the delayed one.
        SELECT count(*), max(s.position) INTO v_n, v_last FROM (
            SELECT m.position,
                   bool_and(m.created_at <= v_now - v_cand.delayed_processing * interval '1 second')
                       OVER (ORDER BY m.position) AS visible
            FROM messages m
            WHERE m.partition_id = v_cand.pid AND m.position > v_c.cursor
            ORDER BY m.position LIMIT v_budget) s
        WHERE s.visible;
        CONTINUE WHEN v_n = 0;

        IF p_auto_ack THEN
            UPDATE consumers c SET cursor = v_last, lease_id = NULL, lease_expires_at = NULL,
                batch_end = NULL, retry_count = 0, retry_not_before = NULL,
                messages_consumed = c.messages_consumed + v_n,
                batches_consumed = c.batches_consumed + 1, last_consumed_at = v_now
            WHERE c.partition_id = v_cand.pid AND c.consumer_group = p_group;
        ELSE
            UPDATE consumers c SET lease_id = p_lease_id,
                lease_expires_at = v_now + CASE v_cand.lease_time WHEN 0 THEN 60 ELSE v_cand.lease_time END
                                           * interval '1 second',
                batch_end = v_last
            WHERE c.partition_id = v_cand.pid AND c.consumer_group = p_group;
        END IF;

        RETURN QUERY
        SELECT m.id, m.transaction_id, m.trace_id, m.payload::text, m.producer_sub, m.created_at,
               m.partition_id, v_cand.pname, v_cand.qname, v_c.retry_count, m.encrypted
        FROM messages m
        WHERE m.partition_id = v_cand.pid AND m.position > v_c.cursor AND m.position <= v_last
        ORDER BY m.position;

        v_budget := v_budget - v_n;
        v_claimed := v_claimed + 1;
    END LOOP;
END $$;

-- Extends a live lease on every pair that holds it (concepts.md §7). Returns the earliest
-- resulting expiry, or NULL with p_state 'not_found' / 'expired'.
CREATE OR REPLACE FUNCTION qg_extend_lease(p_lease_id uuid, p_seconds integer, p_now timestamptz,
    OUT expires_at timestamptz, OUT state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
BEGIN
    -- Lock in the common consumer-row order so an extend never deadlocks with an ack batch.
    PERFORM 1 FROM consumers c WHERE c.lease_id = p_lease_id
    ORDER BY c.partition_id, c.consumer_group FOR NO KEY UPDATE;
    WITH upd AS (
        UPDATE consumers c
        SET lease_expires_at = greatest(c.lease_expires_at, v_now + p_seconds * interval '1 second')
        WHERE c.lease_id = p_lease_id AND c.lease_expires_at > v_now
        RETURNING c.lease_expires_at)
    SELECT min(u.lease_expires_at) INTO expires_at FROM upd u;
    IF expires_at IS NOT NULL THEN
        state := 'extended';
    ELSIF EXISTS (SELECT 1 FROM consumers c WHERE c.lease_id = p_lease_id) THEN
        state := 'expired';
    ELSE
        state := 'not_found';
    END IF;
END $$;
