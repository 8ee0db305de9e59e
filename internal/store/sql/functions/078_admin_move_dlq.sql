-- POST /api/v1/messages/:partitionId/:transactionId/dlq (docs/api/admin-api.md §2.5,
-- docs/api/concepts.md §9.1): dead-letters one stored message for the groups that have not
-- consumed it, leaving every other message where it is. For a group whose cursor is before the
-- message, the move writes a DLQ entry and a skip mark (table skip_marks), which qg_claim
-- honours: that group's deliveries pass over the message, and nothing else of the pair (cursor,
-- lease, batch, retry counter, retry delay) changes.
--
-- Locks: the partition's consumer rows in ascending group order (FOR UPDATE, as acks take
-- them), the order of every write path. A claim in flight on a pair is waited for, so the move
-- then sees its lease ("Message is leased"); a claim after the move sees the mark.

-- Returns one row per group: action moved or skipped, with the reason of a skip. No row: no
-- such message. p_group NULL means every consumer of the partition (__QUEUE_MODE__, created
-- with cursor 0, when it has none); a named group that has no cursor on the partition gets one
-- placed as its first claim would place it when it is registered on the queue (or it is queue
-- mode on a partition without consumers), else it is skipped.
CREATE OR REPLACE FUNCTION qg_move_to_dlq(p_pid uuid, p_key text, p_group text, p_reason text,
    p_now timestamptz)
RETURNS TABLE (consumer_group text, action text, reason text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_pos bigint;
    v_mid uuid;
    v_qid uuid;
    v_c   consumers%ROWTYPE;
BEGIN
    SELECT m.position, m.id INTO v_pos, v_mid FROM messages m
    WHERE m.partition_id = p_pid AND m.transaction_id = p_key AND qg_sees_partition(p_pid);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT p.queue_id INTO v_qid FROM partitions p WHERE p.id = p_pid;

    IF p_group IS NOT NULL THEN
        IF NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p_pid AND c.consumer_group = p_group) THEN
            IF EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = v_qid AND s.consumer_group = p_group)
               OR (p_group = '__QUEUE_MODE__' AND NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p_pid)) THEN
                INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
                SELECT p_pid, p_group, v_qid,
                       qg_initial_cursor(p_pid, coalesce(s.mode, 'all'), s.subscription_timestamp, false)
                FROM (SELECT 1) x
                LEFT JOIN subscriptions s ON s.queue_id = v_qid AND s.consumer_group = p_group
                ON CONFLICT DO NOTHING;
            ELSE
                RETURN QUERY SELECT p_group, 'skipped'::text, 'Not a consumer of this partition'::text;
                RETURN;
            END IF;
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p_pid) THEN
        INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
        VALUES (p_pid, '__QUEUE_MODE__', v_qid, 0) ON CONFLICT DO NOTHING;
    END IF;

    FOR v_c IN SELECT * FROM consumers c
               WHERE c.partition_id = p_pid AND (p_group IS NULL OR c.consumer_group = p_group)
               ORDER BY c.consumer_group FOR UPDATE
    LOOP
        IF v_pos > v_c.cursor AND EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_pid
                                            AND k.consumer_group = v_c.consumer_group AND k.position = v_pos) THEN
            RETURN QUERY SELECT v_c.consumer_group, 'moved'::text, NULL::text; -- moved before
        ELSIF v_pos > v_c.cursor AND v_c.lease_expires_at > v_now AND v_pos <= v_c.batch_end THEN
            RETURN QUERY SELECT v_c.consumer_group, 'skipped'::text, 'Message is leased'::text;
        ELSIF v_pos > v_c.cursor THEN
            PERFORM qg_dead_letter(p_pid, v_pos, v_c.consumer_group, p_reason, 0, v_now);
            INSERT INTO skip_marks (partition_id, consumer_group, position, created_at)
            VALUES (p_pid, v_c.consumer_group, v_pos, v_now);
            RETURN QUERY SELECT v_c.consumer_group, 'moved'::text, NULL::text;
        ELSIF v_c.lease_expires_at > v_now AND v_c.batch_end <= v_c.cursor
              AND EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = v_c.consumer_group
                            AND r.position = v_pos AND r.in_batch) THEN
            -- in the group's live requeue batch (docs/api/concepts.md §9.3)
            RETURN QUERY SELECT v_c.consumer_group, 'skipped'::text, 'Message is leased'::text;
        ELSIF EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = v_c.consumer_group
                        AND r.position = v_pos) THEN
            -- in the requeued set: dead-lettered again, it leaves the set
            PERFORM qg_dead_letter(p_pid, v_pos, v_c.consumer_group, p_reason, 0, v_now);
            DELETE FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = v_c.consumer_group
              AND r.position = v_pos;
            RETURN QUERY SELECT v_c.consumer_group, 'moved'::text, NULL::text;
        ELSIF EXISTS (SELECT 1 FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_mid
                        AND d.consumer_group = v_c.consumer_group) THEN
            RETURN QUERY SELECT v_c.consumer_group, 'moved'::text, NULL::text; -- dead-lettered already
        ELSE
            RETURN QUERY SELECT v_c.consumer_group, 'skipped'::text, 'Message already consumed'::text;
        END IF;
    END LOOP;
END $$;
