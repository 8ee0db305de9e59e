-- DELETE /api/v1/queues/:queue/clear (docs/api/admin-api.md §1.2): removes the messages of a
-- queue, or of one partition, in bounded batches, keeping the queue, its partitions, consumer
-- groups, cursors, counters, subscriptions and DLQ entries. Each batch is its own transaction
-- and walks one partition's primary key from its start, so the whole clear is linear in the
-- messages removed and no statement outlives a batch.

-- The partitions to clear and, for each, its last position now: messages written after the
-- call started lie beyond it and are kept. One row (false, NULL, NULL) for an unknown queue,
-- (true, NULL, NULL) for an unknown partition of a known queue. VOLATILE although it writes
-- nothing: a STABLE function reads with its caller's snapshot, taken before its statements
-- lock partition_heads, and a rewrite of the heads (qg_compact_hot) committing in between
-- would look like an empty table (TRUNCATE is not MVCC-safe): a clear of nothing, or a named
-- partition reported unknown. VOLATILE, each statement takes its snapshot after its locks.
CREATE OR REPLACE FUNCTION qg_clear_targets(p_queue text, p_partition text)
RETURNS TABLE (queue_found boolean, partition_id text, upto bigint) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid uuid;
BEGIN
    SELECT q.id INTO v_qid FROM queues q WHERE q.name = p_queue;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, p.id::text, h.last_position FROM partitions p JOIN partition_heads h ON h.partition_id = p.id
        WHERE p.queue_id = v_qid AND (p_partition IS NULL OR p.name = p_partition) ORDER BY p.id;
    IF NOT FOUND AND p_partition IS NOT NULL THEN
        RETURN QUERY SELECT true, NULL::text, NULL::bigint;
    END IF;
END $$;

-- One batch of a clear: removes up to p_limit messages of the partition at or below p_upto,
-- oldest first, with their trace records (foreign key) and keeping their dedup keys taken
-- until their window ends (qg_remove_messages), and records them in the retention history as
-- kind clear under p_run. Pairs with a cursor below p_upto lose their lease, batch, retry
-- counter and retry delay, as a seek would clear them: their outstanding batches are being
-- removed, and holders' later acks answer Message not found. done is true when nothing at or
-- below p_upto is left (or the partition is gone).
--
-- Locks: the partition row as a writer (FOR NO KEY UPDATE, so pushes to it wait at most one
-- batch), then its consumer rows in ascending group order: the order of every write path.
-- Pops skip the locked consumer rows rather than wait.
CREATE OR REPLACE FUNCTION qg_clear_batch(p_run uuid, p_pid uuid, p_upto bigint, p_limit integer,
    p_now timestamptz)
RETURNS TABLE (removed bigint, unconsumed bigint, done boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_pos bigint[];
    v_min bigint;
    v_n   integer;
BEGIN
    PERFORM 1 FROM partitions p WHERE p.id = p_pid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint, true;
        RETURN;
    END IF;
    PERFORM 1 FROM consumers c WHERE c.partition_id = p_pid ORDER BY c.consumer_group FOR NO KEY UPDATE;

    SELECT array_agg(x.position ORDER BY x.position) INTO v_pos
    FROM (SELECT m.position FROM messages m
          WHERE m.partition_id = p_pid AND m.position <= p_upto
          ORDER BY m.position LIMIT p_limit) x;
    v_n := coalesce(cardinality(v_pos), 0);
    removed := 0;
    unconsumed := 0;
    IF v_n > 0 THEN
        v_min := qg_min_cursor(p_pid);
        SELECT coalesce(sum(r.removed), 0)::bigint, coalesce(sum(r.unconsumed), 0)::bigint
        INTO removed, unconsumed
        FROM qg_record_removals(p_run, array_fill(p_pid, ARRAY[v_n]), v_pos,
            array_fill('clear'::text, ARRAY[v_n]),
            ARRAY(SELECT v_min IS NULL OR u.pos > v_min FROM unnest(v_pos) WITH ORDINALITY AS u (pos, o) ORDER BY u.o),
            array_fill(0, ARRAY[v_n]), v_now) r;
    END IF;

    UPDATE consumers c
    SET lease_id = NULL, lease_expires_at = NULL, batch_end = NULL, retry_count = 0, retry_not_before = NULL
    WHERE c.partition_id = p_pid AND c.cursor < p_upto
      AND (c.lease_id IS NOT NULL OR c.batch_end IS NOT NULL OR c.retry_count <> 0 OR c.retry_not_before IS NOT NULL);

    done := v_n < p_limit OR NOT EXISTS (
        SELECT 1 FROM messages m WHERE m.partition_id = p_pid AND m.position <= p_upto);
    RETURN NEXT;
END $$;
