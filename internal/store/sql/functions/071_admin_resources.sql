-- Resources (docs/api/admin-api.md §1): queue, namespace and task summaries, queue detail, the
-- overview, and queue deletion. Counters come from qg_partition_counts.

-- The system overview: object counts, message counters, lag over every (partition, consumer)
-- pair and messages written in the last 60 s.
CREATE OR REPLACE FUNCTION qg_overview(p_now timestamptz)
RETURNS TABLE (queues bigint, partitions bigint, namespaces bigint, tasks bigint,
               total bigint, unconsumed bigint, processing bigint, dead_letter bigint,
               time_avg float8, time_median float8, time_min bigint, time_max bigint,
               offset_avg float8, offset_median float8, offset_min bigint, offset_max bigint,
               ingested_last_minute bigint)
LANGUAGE sql STABLE AS $$
    WITH counts AS (
        SELECT coalesce(sum(s.total), 0)::bigint AS total, coalesce(sum(s.unconsumed), 0)::bigint AS unconsumed,
               coalesce(sum(s.processing), 0)::bigint AS processing
        FROM partitions p CROSS JOIN LATERAL qg_partition_counts(p.id, p_now) s
    ), lag AS (
        SELECT coalesce(avg(l.time_lag), 0)::float8 AS t_avg,
               coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.time_lag), 0)::float8 AS t_med,
               coalesce(min(l.time_lag), 0) AS t_min, coalesce(max(l.time_lag), 0) AS t_max,
               coalesce(avg(l.offset_lag), 0)::float8 AS o_avg,
               coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.offset_lag), 0)::float8 AS o_med,
               coalesce(min(l.offset_lag), 0) AS o_min, coalesce(max(l.offset_lag), 0) AS o_max
        FROM consumers c CROSS JOIN LATERAL qg_pair_lag(c.partition_id, c.cursor, p_now) l
    )
    SELECT (SELECT count(*) FROM queues), (SELECT count(*) FROM partitions),
           (SELECT count(DISTINCT q.namespace) FROM queues q), (SELECT count(DISTINCT q.task) FROM queues q),
           counts.total, counts.unconsumed, counts.processing, (SELECT count(*) FROM dlq),
           lag.t_avg, lag.t_med, lag.t_min, lag.t_max, lag.o_avg, lag.o_med, lag.o_min, lag.o_max,
           (SELECT count(*) FROM partitions p JOIN messages m ON m.partition_id = p.id
            WHERE p.last_message_at > coalesce(p_now, now()) - interval '60 seconds'
              AND m.created_at > coalesce(p_now, now()) - interval '60 seconds')
    FROM counts, lag;
$$;

-- Deletes a queue and, through the foreign keys, everything of it (docs/api/concepts.md §2.1):
-- partitions, messages, trace records, dedup keys, consumer state and work index,
-- subscriptions, DLQ entries.
-- Returns false when there is no such queue. Locks follow the order of every write path — the
-- queue row (as capped pushers and configure take it), its partitions in ascending id order,
-- then its consumer rows — so a pusher holding partition locks is waited for, never
-- deadlocked with. FOR NO KEY UPDATE on the queue lets foreign-key checks of in-flight writers
-- proceed. The queue's creation lock (qg_lock_queue_groups), taken right after the queue row,
-- makes a concurrent partition creation wait for the deletion instead of creating partitions
-- the deletion then removes, so a push racing a deletion recreates the queue after it.
CREATE OR REPLACE FUNCTION qg_delete_queue(p_queue text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
BEGIN
    SELECT q.id INTO v_qid FROM queues q WHERE q.name = p_queue FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM qg_lock_queue_groups(ARRAY[v_qid]);
    PERFORM 1 FROM partitions p WHERE p.queue_id = v_qid ORDER BY p.id FOR UPDATE;
    PERFORM 1 FROM consumers c WHERE c.queue_id = v_qid ORDER BY c.partition_id, c.consumer_group FOR UPDATE;
    -- messages carry no foreign key (see 0001): remove them before their partitions cascade.
    DELETE FROM messages m WHERE m.partition_id IN (SELECT p.id FROM partitions p WHERE p.queue_id = v_qid);
    DELETE FROM queues q WHERE q.id = v_qid;
    RETURN true;
END $$;
