-- The stats job (docs/api/operations.md §5, docs/api/admin-api.md §8): recomputes the counters behind the status
-- routes into the stats tables, in batches of partitions, then rolls them up per queue,
-- namespace, task and system and keeps a per-minute history. Counting is done here, in the
-- background, so status requests read a row per partition or queue instead of scanning
-- messages. Counters use the same definitions as the admin routes (qg_partition_counts,
-- qg_pair_lag; docs/api/concepts.md §10). p_now NULL means the database clock.

-- Recomputes up to p_limit partitions after p_after (in id order; NULL = from the first) and
-- the lag of their consumers. Returns the last partition id done, NULL when there was none.
CREATE OR REPLACE FUNCTION qg_stats_partitions(p_run uuid, p_after uuid, p_limit integer, p_now timestamptz)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_ids uuid[];
BEGIN
    SELECT array_agg(x.id ORDER BY x.id) INTO v_ids
    FROM (SELECT p.id FROM partitions p WHERE p_after IS NULL OR p.id > p_after
          ORDER BY p.id LIMIT p_limit) x;
    IF v_ids IS NULL THEN
        RETURN NULL;
    END IF;

    -- The batch's ids are joined, not matched with = ANY: the plans of this function are
    -- cached from early runs, when these tables were nearly empty, and such a plan filtered
    -- every row of a table against the whole array (stats over 10,000 partitions took
    -- seconds per batch of 500). A join costs at worst a scan, never rows × ids.
    DELETE FROM stats_consumers sc USING unnest(v_ids) b (id) WHERE sc.partition_id = b.id;
    INSERT INTO stats_consumers (partition_id, consumer_group, queue_id, run_id, offset_lag, time_lag,
                                 oldest_unconsumed_at)
    SELECT c.partition_id, c.consumer_group, c.queue_id, p_run, l.offset_lag, l.time_lag, l.oldest_at
    FROM unnest(v_ids) b (id) JOIN consumers c ON c.partition_id = b.id
    CROSS JOIN LATERAL qg_pair_lag(c.partition_id, c.consumer_group, c.cursor, v_now) l;

    DELETE FROM stats s USING unnest(v_ids::text[]) b (key) WHERE s.scope = 'partition' AND s.key = b.key;
    INSERT INTO stats (scope, key, queue_id, run_id, partitions, total, pending, processing, completed,
                       dead_letter, dlq_partitions, consumer_groups, active_leases, leased_partitions,
                       leased_messages, messages_consumed, batches_consumed, time_lag_max, offset_lag_max,
                       oldest_message_at, newest_message_at, last_consumed_at, computed_at)
    SELECT 'partition', p.id::text, p.queue_id, p_run, 1, n.total, n.unconsumed - n.processing,
           n.processing, n.total - n.unconsumed, n.dead_letter, (n.dead_letter > 0)::integer,
           c.pairs, c.leases, (c.leases > 0)::integer, c.leased, c.consumed, c.batches,
           coalesce(l.time_max, 0), coalesce(l.offset_max, 0), n.oldest_at, n.newest_at, c.last_consumed,
           v_now
    FROM unnest(v_ids) b (id) JOIN partitions p ON p.id = b.id
    CROSS JOIN LATERAL qg_partition_counts(p.id, v_now) n
    CROSS JOIN LATERAL (
        SELECT count(*)::integer AS pairs,
               count(*) FILTER (WHERE c.lease_expires_at > v_now)::integer AS leases,
               coalesce(sum(greatest(c.batch_end - c.cursor, 0)) FILTER (WHERE c.lease_expires_at > v_now), 0)::bigint AS leased,
               coalesce(sum(c.messages_consumed), 0)::bigint AS consumed,
               coalesce(sum(c.batches_consumed), 0)::bigint AS batches,
               max(c.last_consumed_at) AS last_consumed
        FROM consumers c WHERE c.partition_id = p.id) c
    CROSS JOIN LATERAL (
        SELECT max(sc.time_lag) AS time_max, max(sc.offset_lag) AS offset_max
        FROM stats_consumers sc WHERE sc.partition_id = p.id) l;
    RETURN v_ids[cardinality(v_ids)];
END $$;

-- Lag over the (partition, consumer) pairs of the given queues (NULL = all), in seconds and
-- messages, as the overview reports it (docs/api/admin-api.md §1).
CREATE OR REPLACE FUNCTION qg_lag_summary(p_queue_ids uuid[])
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'time', jsonb_build_object(
            'avg', coalesce(avg(sc.time_lag), 0)::float8,
            'median', coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY sc.time_lag), 0)::float8,
            'min', coalesce(min(sc.time_lag), 0), 'max', coalesce(max(sc.time_lag), 0)),
        'offset', jsonb_build_object(
            'avg', coalesce(avg(sc.offset_lag), 0)::float8,
            'median', coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY sc.offset_lag), 0)::float8,
            'min', coalesce(min(sc.offset_lag), 0), 'max', coalesce(max(sc.offset_lag), 0)))
    FROM stats_consumers sc
    WHERE p_queue_ids IS NULL OR sc.queue_id = ANY (p_queue_ids);
$$;

-- Finishes a stats run: drops the rows of partitions and pairs the run did not see (they are
-- gone), recomputes the queue, namespace, task and system rows and the DLQ reasons, and writes
-- the minute's history. Returns the rows refreshed per level and the stale rows removed.
CREATE OR REPLACE FUNCTION qg_stats_rollup(p_run uuid, p_now timestamptz)
RETURNS TABLE (partitions bigint, queues bigint, namespaces bigint, tasks bigint, systems bigint,
               cleanup bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_n   bigint;
BEGIN
    DELETE FROM stats s WHERE s.scope = 'partition' AND s.run_id <> p_run;
    GET DIAGNOSTICS cleanup = ROW_COUNT;
    DELETE FROM stats_consumers sc WHERE sc.run_id <> p_run;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    cleanup := cleanup + v_n;
    SELECT count(*) INTO partitions FROM stats s WHERE s.scope = 'partition';

    DELETE FROM stats_dlq_errors;
    INSERT INTO stats_dlq_errors (queue_id, error_message, entries)
    SELECT x.queue_id, x.error_message, x.n
    FROM (SELECT d.queue_id, d.error_message, count(*) AS n,
                 row_number() OVER (PARTITION BY d.queue_id ORDER BY count(*) DESC, d.error_message) AS rk
          FROM dlq d GROUP BY d.queue_id, d.error_message) x
    WHERE x.rk <= 50;

    -- Rows of queues, namespaces and tasks that are gone count as cleaned up.
    SELECT count(*) INTO v_n FROM stats s
    WHERE (s.scope = 'queue' AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.id::text = s.key))
       OR (s.scope = 'namespace' AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.namespace = s.key))
       OR (s.scope = 'task' AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.task = s.key));
    cleanup := cleanup + v_n;
    DELETE FROM stats s WHERE s.scope IN ('queue', 'namespace', 'task', 'system');

    INSERT INTO stats (scope, key, queue_id, run_id, queues, partitions, total, pending, processing,
                       completed, dead_letter, dlq_partitions, consumer_groups, active_leases,
                       leased_partitions, leased_messages, messages_consumed, batches_consumed,
                       time_lag_max, offset_lag_max, lag, oldest_message_at, newest_message_at,
                       last_consumed_at, computed_at)
    SELECT 'queue', q.id::text, q.id, p_run, 1, count(s.key), coalesce(sum(s.total), 0),
           coalesce(sum(s.pending), 0), coalesce(sum(s.processing), 0), coalesce(sum(s.completed), 0),
           coalesce(d.entries, 0), coalesce(d.parts, 0), coalesce(sum(s.consumer_groups), 0),
           coalesce(sum(s.active_leases), 0), coalesce(sum(s.leased_partitions), 0),
           coalesce(sum(s.leased_messages), 0), coalesce(sum(s.messages_consumed), 0),
           coalesce(sum(s.batches_consumed), 0), coalesce(max(s.time_lag_max), 0),
           coalesce(max(s.offset_lag_max), 0), qg_lag_summary(ARRAY[q.id]), min(s.oldest_message_at),
           max(s.newest_message_at), max(s.last_consumed_at), v_now
    FROM queues q
    LEFT JOIN stats s ON s.scope = 'partition' AND s.queue_id = q.id
    LEFT JOIN (SELECT d.queue_id, count(*) AS entries, count(DISTINCT d.partition_id) AS parts
               FROM dlq d GROUP BY d.queue_id) d ON d.queue_id = q.id
    GROUP BY q.id, d.entries, d.parts;
    GET DIAGNOSTICS queues = ROW_COUNT;

    -- Namespaces, tasks and the system sum their queues; the empty grouping set always yields
    -- the system row, even without queues.
    INSERT INTO stats (scope, key, run_id, queues, partitions, total, pending, processing, completed,
                       dead_letter, dlq_partitions, consumer_groups, active_leases, leased_partitions,
                       leased_messages, messages_consumed, batches_consumed, time_lag_max,
                       offset_lag_max, lag, oldest_message_at, newest_message_at, last_consumed_at,
                       computed_at)
    SELECT CASE WHEN grouping(q.namespace) = 0 THEN 'namespace'
                WHEN grouping(q.task) = 0 THEN 'task' ELSE 'system' END,
           coalesce(q.namespace, q.task, ''), p_run, count(s.key), coalesce(sum(s.partitions), 0),
           coalesce(sum(s.total), 0), coalesce(sum(s.pending), 0), coalesce(sum(s.processing), 0),
           coalesce(sum(s.completed), 0), coalesce(sum(s.dead_letter), 0),
           coalesce(sum(s.dlq_partitions), 0), coalesce(sum(s.consumer_groups), 0),
           coalesce(sum(s.active_leases), 0), coalesce(sum(s.leased_partitions), 0),
           coalesce(sum(s.leased_messages), 0), coalesce(sum(s.messages_consumed), 0),
           coalesce(sum(s.batches_consumed), 0), coalesce(max(s.time_lag_max), 0),
           coalesce(max(s.offset_lag_max), 0),
           qg_lag_summary(CASE WHEN grouping(q.namespace) = 1 AND grouping(q.task) = 1 THEN NULL
                               ELSE coalesce(array_agg(q.id) FILTER (WHERE q.id IS NOT NULL), '{}') END),
           min(s.oldest_message_at), max(s.newest_message_at), max(s.last_consumed_at), v_now
    FROM stats s JOIN queues q ON q.id = s.queue_id AND s.scope = 'queue'
    GROUP BY GROUPING SETS ((q.namespace), (q.task), ());
    SELECT count(*) FILTER (WHERE s.scope = 'namespace'), count(*) FILTER (WHERE s.scope = 'task'),
           count(*) FILTER (WHERE s.scope = 'system')
    INTO namespaces, tasks, systems
    FROM stats s WHERE s.scope IN ('namespace', 'task', 'system');

    INSERT INTO stats_history AS h (bucket, scope, key, queue_name, total, pending, processing,
                                    completed, dead_letter, time_lag_max)
    SELECT date_trunc('minute', v_now), s.scope, s.key, coalesce(q.name, ''), s.total, s.pending,
           s.processing, s.completed, s.dead_letter, s.time_lag_max
    FROM stats s LEFT JOIN queues q ON q.id = s.queue_id
    WHERE s.scope IN ('queue', 'system')
    ON CONFLICT ON CONSTRAINT stats_history_pkey DO UPDATE
    SET queue_name = EXCLUDED.queue_name, total = EXCLUDED.total, pending = EXCLUDED.pending,
        processing = EXCLUDED.processing, completed = EXCLUDED.completed,
        dead_letter = EXCLUDED.dead_letter, time_lag_max = EXCLUDED.time_lag_max;
    RETURN NEXT;
END $$;
