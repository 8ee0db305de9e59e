-- Requeue from the DLQ in copy mode (docs/api/admin-api.md §3.2, docs/api/concepts.md §9.2): a
-- new message, written as a push writes it, from each entry's payload copy into a target queue
-- and partition; the entry is removed with its copy, whether or not its message is still stored.

-- The entries a copy acts on, with what the caller needs to build the copies (the payload
-- copy, as stored, and the entry's partition name, the default target partition): by p_ids
-- (the ones that exist), or (p_ids NULL) up to p_limit entries matching the filters, oldest
-- failedAt first (ties by id).
CREATE OR REPLACE FUNCTION qg_dlq_copy_sources(p_ids uuid[], p_queue text, p_group text, p_partition text,
    p_error text, p_from timestamptz, p_to timestamptz, p_limit integer)
RETURNS TABLE (id text, partition_name text, payload text, encrypted boolean, trace_id text)
LANGUAGE sql STABLE AS $$
    SELECT d.id::text, d.partition_name, d.payload::text, d.encrypted, d.trace_id::text
    FROM dlq d WHERE p_ids IS NOT NULL AND d.id = ANY (p_ids) AND qg_sees_queue(d.queue_id)
    UNION ALL
    SELECT x.* FROM (
        SELECT d.id::text, d.partition_name, d.payload::text, d.encrypted, d.trace_id::text
        FROM qg_dlq_matching(p_queue, p_group, p_partition, p_error, p_from, p_to) d
        WHERE p_ids IS NULL
        ORDER BY d.failed_at, d.id LIMIT p_limit) x;
$$;

-- Writes the copies of the entries p_dlq_ids (item i into (p_queues[i], p_partitions[i]), with
-- message id p_ids[i], which is also its key) and removes each entry whose copy was written,
-- in one transaction. The push's locks are taken first (capped queues, partitions), then the
-- entries (ascending id). Raises
-- QG001 when a target partition is missing (the caller creates it and calls again). Returns per
-- entry that still existed: its id, the push status (queued | failed: the target queue is at
-- its maxSize) and, when queued, the new message's partition and queue.
CREATE OR REPLACE FUNCTION qg_dlq_copy(p_dlq_ids uuid[], p_queues text[], p_partitions text[], p_ids uuid[],
    p_payloads text[], p_encrypted boolean[], p_traces uuid[], p_subs text[], p_now timestamptz)
RETURNS TABLE (dlq_id text, status text, partition_id text, queue_name text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_keep  integer[];
    v_pids  uuid[];
    v_plan  qg_push_plan[];
    v_qids  uuid[];
BEGIN
    v_pids := qg_partition_ids(p_queues, p_partitions);
    IF array_position(v_pids, NULL) IS NOT NULL THEN
        PERFORM qg_raise_missing_partitions();
    END IF;
    -- A push's locks first, in its order (docs/api/concepts.md §4.2: capped queues, partitions),
    -- then the entries: a message deletion holds its partition, then removes the message's
    -- entries, so taking an entry before a partition could deadlock with it.
    PERFORM 1 FROM queues q
    WHERE q.max_size > 0 AND q.id IN (SELECT p.queue_id FROM partitions p WHERE p.id = ANY (v_pids))
    ORDER BY q.id FOR NO KEY UPDATE;
    PERFORM 1 FROM partitions p WHERE p.id = ANY (v_pids) ORDER BY p.id FOR NO KEY UPDATE;
    PERFORM 1 FROM dlq d WHERE d.id = ANY (p_dlq_ids) ORDER BY d.id FOR UPDATE;
    SELECT array_agg(u.ord ORDER BY u.ord) INTO v_keep
    FROM unnest(p_dlq_ids) WITH ORDINALITY AS u (id, ord)
    WHERE EXISTS (SELECT 1 FROM dlq d WHERE d.id = u.id);
    IF v_keep IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(r ORDER BY r.i) INTO v_plan FROM qg_push_items(ARRAY(SELECT v_pids[k] FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_ids[k]::text FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_ids[k] FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_payloads[k] FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_encrypted[k] FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_traces[k] FROM unnest(v_keep) AS k),
        ARRAY(SELECT p_subs[k] FROM unnest(v_keep) AS k),
        v_now, false) r;
    DELETE FROM dlq d USING unnest(v_plan) WITH ORDINALITY AS r (i, status, mid, pid, pos, qid, qname, pname, ord)
    WHERE r.status = 'queued' AND d.id = p_dlq_ids[v_keep[r.ord]];
    SELECT array_agg(DISTINCT r.qid) INTO v_qids FROM unnest(v_plan) r WHERE r.status = 'queued';
    PERFORM qg_notify_queue(q) FROM unnest(v_qids) AS q;
    RETURN QUERY
    SELECT p_dlq_ids[v_keep[r.ord]]::text, r.status, r.pid::text, r.qname
    FROM unnest(v_plan) WITH ORDINALITY AS r (i, status, mid, pid, pos, qid, qname, pname, ord)
    ORDER BY r.ord;
END $$;
