-- Requeue from the DLQ in redeliver mode and the message retry (docs/api/admin-api.md §2.4,
-- §3.2; docs/api/concepts.md §9.2). Each call is one transaction. Locks: the consumer rows of
-- the entries' pairs in ascending (partition, group) order, the order of every write path; then
-- the entries' messages (KEY SHARE, as the requeued rows' foreign key takes it anyway); then
-- the entries (ascending id); work rows last, as acks take them. Retention and clear hold
-- consumer rows while they remove messages, and a message deletion removes the message before
-- its entries, so this order waits on both and deadlocks with neither. The entries are first
-- read without a lock to find the pairs; they never change, and one removed meanwhile is
-- reported as not found. Parked pops of the affected queues are notified on commit.

-- Requeues one DLQ entry for its group (the caller holds the entry and its pair's consumer
-- row). Returns NULL when the entry was requeued (and removed), else the reason it is kept.
-- The message, for the entry's group: already in the requeued set: nothing more; after the
-- cursor: its skip mark is dropped and it comes in its normal order; at or below the cursor: it
-- joins the set with rq 0 and the pair is listed in the work index by its creation time.
CREATE OR REPLACE FUNCTION qg_requeue_entry(p_id uuid, p_now timestamptz)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_d       dlq%ROWTYPE;
    v_pos     bigint;
    v_created timestamptz;
    v_cursor  bigint;
    v_qid     uuid;
BEGIN
    SELECT * INTO v_d FROM dlq d WHERE d.id = p_id AND qg_sees_queue(d.queue_id);
    IF NOT FOUND THEN
        RETURN 'DLQ entry not found';
    END IF;
    SELECT m.position, m.created_at INTO v_pos, v_created FROM messages m
    WHERE m.partition_id = v_d.partition_id AND m.transaction_id = v_d.transaction_id AND m.id = v_d.message_id;
    IF NOT FOUND THEN
        RETURN 'Message no longer stored';
    END IF;
    SELECT c.cursor, c.queue_id INTO v_cursor, v_qid FROM consumers c
    WHERE c.partition_id = v_d.partition_id AND c.consumer_group = v_d.consumer_group;
    IF NOT FOUND THEN
        RETURN 'Consumer group has no cursor on the partition';
    END IF;
    IF EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = v_d.partition_id
                 AND r.consumer_group = v_d.consumer_group AND r.position = v_pos) THEN
        NULL; -- another entry of the same message and group put it there
    ELSIF v_pos > v_cursor THEN
        DELETE FROM skip_marks k WHERE k.partition_id = v_d.partition_id
          AND k.consumer_group = v_d.consumer_group AND k.position = v_pos;
        PERFORM qg_track_work(ARRAY[v_d.partition_id], v_d.consumer_group);
    ELSE
        INSERT INTO requeued (partition_id, consumer_group, position, rq, requeued_at)
        VALUES (v_d.partition_id, v_d.consumer_group, v_pos, 0, p_now);
        INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
        VALUES (v_d.partition_id, v_d.consumer_group, v_qid, v_created)
        ON CONFLICT (partition_id, consumer_group) DO UPDATE SET next_at = EXCLUDED.next_at
        WHERE partition_work.next_at > EXCLUDED.next_at;
    END IF;
    DELETE FROM dlq d WHERE d.id = p_id;
    RETURN NULL;
END $$;

-- Requeues the entries p_ids in redeliver mode, in the order given (each id once; the caller
-- drops repeats). Returns how many were requeued, the ids kept with their reasons (in order),
-- and the names of the queues whose pops may have work now.
CREATE OR REPLACE FUNCTION qg_dlq_redeliver(p_ids uuid[], p_now timestamptz,
    OUT requeued bigint, OUT skipped_ids text[], OUT skipped_reasons text[], OUT queue_names text[])
LANGUAGE plpgsql AS $$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_qids   uuid[];
    v_id     uuid;
    v_qid    uuid;
    v_reason text;
    v_done   uuid[] := '{}';
BEGIN
    requeued := 0;
    skipped_ids := '{}';
    skipped_reasons := '{}';
    PERFORM 1 FROM consumers c
    WHERE (c.partition_id, c.consumer_group) IN (SELECT d.partition_id, d.consumer_group FROM dlq d WHERE d.id = ANY (p_ids))
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE;
    PERFORM 1 FROM messages m
    WHERE (m.partition_id, m.transaction_id) IN (SELECT d.partition_id, d.transaction_id FROM dlq d WHERE d.id = ANY (p_ids))
    ORDER BY m.partition_id, m.position
    FOR KEY SHARE;
    PERFORM 1 FROM dlq d WHERE d.id = ANY (p_ids) ORDER BY d.id FOR UPDATE;
    FOR v_id IN SELECT u.id FROM unnest(p_ids) WITH ORDINALITY AS u (id, ord) ORDER BY u.ord LOOP
        SELECT d.queue_id INTO v_qid FROM dlq d WHERE d.id = v_id;
        v_reason := qg_requeue_entry(v_id, v_now);
        IF v_reason IS NULL THEN
            requeued := requeued + 1;
            IF NOT v_qid = ANY (v_done) THEN
                v_done := v_done || v_qid;
            END IF;
        ELSE
            skipped_ids := skipped_ids || v_id::text;
            skipped_reasons := skipped_reasons || v_reason;
        END IF;
    END LOOP;
    PERFORM qg_notify_queue(q) FROM unnest(v_done) AS q;
    queue_names := ARRAY(SELECT q.name FROM queues q WHERE q.id = ANY (v_done) ORDER BY q.name);
END $$;

-- The entries a redeliver by filter can act on: matching (as qg_dlq_matching), message still
-- stored, group still a consumer of the partition. Repeating a call until it requeues nothing
-- therefore ends. VOLATILE although it writes nothing: its callers' statements reach
-- consumers only through it, and as a STABLE function it would read with their snapshot,
-- taken before it locks consumers: a rewrite of the consumer state (qg_compact_hot)
-- committing in between would look like a partition without consumers, and the entries would
-- be passed over as not redeliverable. VOLATILE, it takes its snapshot after its locks.
CREATE OR REPLACE FUNCTION qg_dlq_redeliverable(p_queue text, p_group text, p_partition text,
    p_error text, p_from timestamptz, p_to timestamptz)
RETURNS SETOF dlq LANGUAGE sql VOLATILE AS $$
    SELECT d.* FROM qg_dlq_matching(p_queue, p_group, p_partition, p_error, p_from, p_to) d
    WHERE EXISTS (SELECT 1 FROM messages m WHERE m.partition_id = d.partition_id
                    AND m.transaction_id = d.transaction_id AND m.id = d.message_id)
      AND EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = d.partition_id
                    AND c.consumer_group = d.consumer_group);
$$;

-- Requeues in redeliver mode up to p_limit entries matching the filters that can be
-- redelivered, oldest failedAt first (ties by id), and counts those left afterwards.
CREATE OR REPLACE FUNCTION qg_dlq_redeliver_matching(p_queue text, p_group text, p_partition text,
    p_error text, p_from timestamptz, p_to timestamptz, p_limit integer, p_now timestamptz,
    OUT requeued bigint, OUT skipped_ids text[], OUT skipped_reasons text[], OUT queue_names text[],
    OUT remaining bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_ids uuid[];
BEGIN
    SELECT array_agg(x.id ORDER BY x.failed_at, x.id) INTO v_ids FROM (
        SELECT d.id, d.failed_at FROM qg_dlq_redeliverable(p_queue, p_group, p_partition, p_error, p_from, p_to) d
        ORDER BY d.failed_at, d.id LIMIT p_limit) x;
    SELECT r.requeued, r.skipped_ids, r.skipped_reasons, r.queue_names
    INTO requeued, skipped_ids, skipped_reasons, queue_names
    FROM qg_dlq_redeliver(coalesce(v_ids, '{}'), p_now) r;
    SELECT count(*) INTO remaining FROM qg_dlq_redeliverable(p_queue, p_group, p_partition, p_error, p_from, p_to);
END $$;

-- POST /api/v1/messages/:partitionId/:transactionId/retry (docs/api/admin-api.md §2.4). For
-- p_group, or (NULL) every consumer of the partition and every group with a DLQ entry of the
-- message, in group order: requeued (its entries requeued in redeliver mode), skipped (with the
-- reason an entry was kept), retry_delay_cleared (the message lies after the cursor, or in the
-- requeued set, of a pair waiting out its retry delay: the delay ends now) or already_requeued.
-- Groups with nothing to do are not returned. No row with found false: no such message.
CREATE OR REPLACE FUNCTION qg_message_retry(p_pid uuid, p_key text, p_group text, p_now timestamptz)
RETURNS TABLE (found boolean, consumer_group text, action text, reason text, queue_name text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_pos    bigint;
    v_mid    uuid;
    v_qid    uuid;
    v_qname  text;
    v_grp    text;
    v_c      consumers%ROWTYPE;
    v_id     uuid;
    v_reason text;
    v_n      integer;
    v_wake   boolean := false;
BEGIN
    -- Locks as qg_dlq_redeliver takes them: consumer rows, the message, its entries.
    PERFORM 1 FROM consumers c WHERE c.partition_id = p_pid AND (p_group IS NULL OR c.consumer_group = p_group)
    ORDER BY c.consumer_group FOR UPDATE;
    SELECT m.position, m.id INTO v_pos, v_mid FROM messages m
    WHERE m.partition_id = p_pid AND m.transaction_id = p_key AND qg_sees_partition(p_pid)
    FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT q.id, q.name INTO v_qid, v_qname FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = p_pid;
    PERFORM 1 FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_mid
      AND (p_group IS NULL OR d.consumer_group = p_group)
    ORDER BY d.id FOR UPDATE;
    FOR v_grp IN
        SELECT c.consumer_group FROM consumers c WHERE c.partition_id = p_pid AND (p_group IS NULL OR c.consumer_group = p_group)
        UNION
        SELECT d.consumer_group FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_mid
          AND (p_group IS NULL OR d.consumer_group = p_group)
        ORDER BY 1
    LOOP
        SELECT * INTO v_c FROM consumers c WHERE c.partition_id = p_pid AND c.consumer_group = v_grp;
        IF EXISTS (SELECT 1 FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_mid AND d.consumer_group = v_grp) THEN
            v_n := 0;
            v_reason := NULL;
            FOR v_id IN SELECT d.id FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_mid
                          AND d.consumer_group = v_grp ORDER BY d.failed_at, d.id LOOP
                v_reason := coalesce(qg_requeue_entry(v_id, v_now), v_reason);
                v_n := v_n + 1;
            END LOOP;
            IF v_reason IS NULL THEN
                v_wake := true;
                RETURN QUERY SELECT true, v_grp, 'requeued'::text, NULL::text, v_qname;
            ELSE
                RETURN QUERY SELECT true, v_grp, 'skipped'::text, v_reason, v_qname;
            END IF;
        ELSIF v_c.partition_id IS NOT NULL AND v_c.retry_not_before > v_now
              AND (v_pos > v_c.cursor OR EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid
                                                   AND r.consumer_group = v_grp AND r.position = v_pos)) THEN
            UPDATE consumers c SET retry_not_before = NULL
            WHERE c.partition_id = p_pid AND c.consumer_group = v_grp;
            v_wake := true;
            RETURN QUERY SELECT true, v_grp, 'retry_delay_cleared'::text, NULL::text, v_qname;
        ELSIF EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = v_grp
                        AND r.position = v_pos) THEN
            RETURN QUERY SELECT true, v_grp, 'already_requeued'::text, NULL::text, v_qname;
        END IF;
    END LOOP;
    IF v_wake THEN
        PERFORM qg_notify_queue(v_qid);
    END IF;
    RETURN QUERY SELECT true, NULL::text, 'none'::text, NULL::text, v_qname; -- the message exists
END $$;
