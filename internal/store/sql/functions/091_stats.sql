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
    -- Two statements, so each plan can walk the primary key from its start (with "p_after IS
    -- NULL OR" in one, the cached plan scanned and sorted every partition for each batch).
    IF p_after IS NULL THEN
        SELECT array_agg(x.id ORDER BY x.id) INTO v_ids
        FROM (SELECT p.id FROM partitions p ORDER BY p.id LIMIT p_limit) x;
    ELSE
        SELECT array_agg(x.id ORDER BY x.id) INTO v_ids
        FROM (SELECT p.id FROM partitions p WHERE p.id > p_after ORDER BY p.id LIMIT p_limit) x;
    END IF;
    IF v_ids IS NULL THEN
        RETURN NULL;
    END IF;

    -- The batch's ids are joined, not matched with = ANY: the plans of this function are
    -- cached from early runs, when these tables were nearly empty, and such a plan filtered
    -- every row of a table against the whole array (stats over 10,000 partitions took
    -- seconds per batch of 500). A join costs at worst a scan, never rows × ids.
    -- Rows are updated in place (upserts; no indexed column changes, and the tables' pages keep
    -- room: migration 0016), so each run's new versions are HOT: no new index entries, and page
    -- pruning reclaims the old ones without vacuum. Deleted and re-inserted, every run left a
    -- dead index entry per row, which the next readers walked (the first page of a queue's
    -- 10,000 partitions took 0.1-0.5 s after a few runs, 10 ms after pruning). Rows of pairs
    -- and partitions that are gone keep an older run_id, and the rollup removes them.
    INSERT INTO stats_consumers AS sc (partition_id, consumer_group, queue_id, run_id, offset_lag, time_lag,
                                 oldest_unconsumed_at, queue_name, partition_name)
    -- The names by key probes: a join planned as a hash read every queue for each batch.
    SELECT c.partition_id, c.consumer_group, c.queue_id, p_run, l.offset_lag, l.time_lag, l.oldest_at,
           (SELECT q.name FROM queues q WHERE q.id = c.queue_id),
           (SELECT p.name FROM partitions p WHERE p.id = c.partition_id)
    FROM unnest(v_ids) b (id) JOIN consumers c ON c.partition_id = b.id
    CROSS JOIN LATERAL qg_pair_lag(c.partition_id, c.consumer_group, c.cursor, v_now) l
    ON CONFLICT ON CONSTRAINT stats_consumers_pkey DO UPDATE SET
        queue_id = EXCLUDED.queue_id, run_id = EXCLUDED.run_id, offset_lag = EXCLUDED.offset_lag,
        time_lag = EXCLUDED.time_lag, oldest_unconsumed_at = EXCLUDED.oldest_unconsumed_at,
        queue_name = EXCLUDED.queue_name, partition_name = EXCLUDED.partition_name;

    INSERT INTO stats AS s (scope, key, queue_id, run_id, partitions, total, pending, processing, completed,
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
        FROM stats_consumers sc WHERE sc.partition_id = p.id AND sc.run_id = p_run) l
    ON CONFLICT ON CONSTRAINT stats_pkey DO UPDATE SET
        queue_id = EXCLUDED.queue_id, run_id = EXCLUDED.run_id, partitions = EXCLUDED.partitions,
        total = EXCLUDED.total, pending = EXCLUDED.pending, processing = EXCLUDED.processing,
        completed = EXCLUDED.completed, dead_letter = EXCLUDED.dead_letter,
        dlq_partitions = EXCLUDED.dlq_partitions, consumer_groups = EXCLUDED.consumer_groups,
        active_leases = EXCLUDED.active_leases, leased_partitions = EXCLUDED.leased_partitions,
        leased_messages = EXCLUDED.leased_messages, messages_consumed = EXCLUDED.messages_consumed,
        batches_consumed = EXCLUDED.batches_consumed, time_lag_max = EXCLUDED.time_lag_max,
        offset_lag_max = EXCLUDED.offset_lag_max, oldest_message_at = EXCLUDED.oldest_message_at,
        newest_message_at = EXCLUDED.newest_message_at, last_consumed_at = EXCLUDED.last_consumed_at,
        computed_at = EXCLUDED.computed_at;
    RETURN v_ids[cardinality(v_ids)];
END $$;

-- Lag over the (partition, consumer) pairs of every queue, namespace and task and of the system
-- (scope, key as in the stats table), in seconds and messages, as the overview reports it
-- (docs/api/admin-api.md §1), from one grouped pass over stats_consumers. (Summarising per
-- queue with a filtered scan of that table each took 10 ms and more, so a rollup at 10,000
-- queues and namespaces ran for minutes: docs/decisions.md.) Scopes without pairs have no row.
CREATE OR REPLACE FUNCTION qg_lag_summaries()
RETURNS TABLE (scope text, key text, lag jsonb)
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN grouping(q.id) = 0 THEN 'queue' WHEN grouping(q.namespace) = 0 THEN 'namespace'
                WHEN grouping(q.task) = 0 THEN 'task' ELSE 'system' END,
           CASE WHEN grouping(q.id) = 0 THEN q.id::text ELSE coalesce(q.namespace, q.task, '') END,
           jsonb_build_object(
               'time', jsonb_build_object(
                   'avg', avg(sc.time_lag)::float8,
                   'median', percentile_cont(0.5) WITHIN GROUP (ORDER BY sc.time_lag)::float8,
                   'min', min(sc.time_lag), 'max', max(sc.time_lag)),
               'offset', jsonb_build_object(
                   'avg', avg(sc.offset_lag)::float8,
                   'median', percentile_cont(0.5) WITHIN GROUP (ORDER BY sc.offset_lag)::float8,
                   'min', min(sc.offset_lag), 'max', max(sc.offset_lag)))
    FROM stats_consumers sc JOIN queues q ON q.id = sc.queue_id
    GROUP BY GROUPING SETS ((q.id), (q.namespace), (q.task), ());
$$;

-- The lag summary of a scope without pairs.
CREATE OR REPLACE FUNCTION qg_lag_summary_empty()
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT '{"time":{"avg":0,"median":0,"min":0,"max":0},"offset":{"avg":0,"median":0,"min":0,"max":0}}'::jsonb;
$$;

DROP FUNCTION IF EXISTS qg_lag_summary(uuid[]);

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
           coalesce(max(s.offset_lag_max), 0), coalesce(l.lag, qg_lag_summary_empty()), min(s.oldest_message_at),
           max(s.newest_message_at), max(s.last_consumed_at), v_now
    FROM queues q
    LEFT JOIN stats s ON s.scope = 'partition' AND s.queue_id = q.id
    LEFT JOIN (SELECT d.queue_id, count(*) AS entries, count(DISTINCT d.partition_id) AS parts
               FROM dlq d GROUP BY d.queue_id) d ON d.queue_id = q.id
    LEFT JOIN qg_lag_summaries() l ON l.scope = 'queue' AND l.key = q.id::text
    GROUP BY q.id, d.entries, d.parts, l.lag;
    GET DIAGNOSTICS queues = ROW_COUNT;

    -- Namespaces, tasks and the system sum their queues; the empty grouping set always yields
    -- the system row, even without queues.
    INSERT INTO stats (scope, key, run_id, queues, partitions, total, pending, processing, completed,
                       dead_letter, dlq_partitions, consumer_groups, active_leases, leased_partitions,
                       leased_messages, messages_consumed, batches_consumed, time_lag_max,
                       offset_lag_max, lag, oldest_message_at, newest_message_at, last_consumed_at,
                       computed_at)
    SELECT x.scope, x.key, p_run, x.queues, x.partitions, x.total, x.pending, x.processing, x.completed,
           x.dead_letter, x.dlq_partitions, x.consumer_groups, x.active_leases, x.leased_partitions,
           x.leased_messages, x.messages_consumed, x.batches_consumed, x.time_lag_max, x.offset_lag_max,
           coalesce(l.lag, qg_lag_summary_empty()), x.oldest_message_at, x.newest_message_at,
           x.last_consumed_at, v_now
    FROM (
    SELECT CASE WHEN grouping(q.namespace) = 0 THEN 'namespace'
                WHEN grouping(q.task) = 0 THEN 'task' ELSE 'system' END AS scope,
           coalesce(q.namespace, q.task, '') AS key, count(s.key) AS queues, coalesce(sum(s.partitions), 0) AS partitions,
           coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending,
           coalesce(sum(s.processing), 0) AS processing, coalesce(sum(s.completed), 0) AS completed,
           coalesce(sum(s.dead_letter), 0) AS dead_letter, coalesce(sum(s.dlq_partitions), 0) AS dlq_partitions,
           coalesce(sum(s.consumer_groups), 0) AS consumer_groups, coalesce(sum(s.active_leases), 0) AS active_leases,
           coalesce(sum(s.leased_partitions), 0) AS leased_partitions,
           coalesce(sum(s.leased_messages), 0) AS leased_messages,
           coalesce(sum(s.messages_consumed), 0) AS messages_consumed,
           coalesce(sum(s.batches_consumed), 0) AS batches_consumed, coalesce(max(s.time_lag_max), 0) AS time_lag_max,
           coalesce(max(s.offset_lag_max), 0) AS offset_lag_max, min(s.oldest_message_at) AS oldest_message_at,
           max(s.newest_message_at) AS newest_message_at, max(s.last_consumed_at) AS last_consumed_at
    FROM stats s JOIN queues q ON q.id = s.queue_id AND s.scope = 'queue'
    GROUP BY GROUPING SETS ((q.namespace), (q.task), ())) x
    LEFT JOIN qg_lag_summaries() l ON l.scope = x.scope AND l.key = x.key;
    -- The overview's ingest throughput: messages written in the minute before the run, from the
    -- partitions written in it.
    UPDATE stats s SET ingested_last_minute = (
        SELECT count(*) FROM partition_heads p JOIN messages m ON m.partition_id = p.partition_id
        WHERE p.last_message_at > v_now - interval '60 seconds' AND m.created_at > v_now - interval '60 seconds')
    WHERE s.scope = 'system';
    SELECT count(*) FILTER (WHERE s.scope = 'namespace'), count(*) FILTER (WHERE s.scope = 'task'),
           count(*) FILTER (WHERE s.scope = 'system')
    INTO namespaces, tasks, systems
    FROM stats s WHERE s.scope IN ('namespace', 'task', 'system');

    INSERT INTO stats_history AS h (bucket, scope, key, tenant, queue_name, total, pending, processing,
                                    completed, dead_letter, time_lag_max)
    SELECT date_trunc('minute', v_now), s.scope, s.key, coalesce(q.tenant, ''), coalesce(q.name, ''), s.total, s.pending,
           s.processing, s.completed, s.dead_letter, s.time_lag_max
    FROM stats s LEFT JOIN queues q ON q.id = s.queue_id
    WHERE s.scope IN ('queue', 'system')
    ON CONFLICT ON CONSTRAINT stats_history_pkey DO UPDATE
    SET tenant = EXCLUDED.tenant, queue_name = EXCLUDED.queue_name, total = EXCLUDED.total, pending = EXCLUDED.pending,
        processing = EXCLUDED.processing, completed = EXCLUDED.completed,
        dead_letter = EXCLUDED.dead_letter, time_lag_max = EXCLUDED.time_lag_max;
    RETURN NEXT;
END $$;
