-- GET /api/v1/resources/partitions (docs/api/admin-api.md §1.1): partitions across queues with
-- their counters. Which partitions exist is read live; the counters come from the stats job's
-- partition rows (zeros until a run has seen the partition), so a page costs the partitions
-- table and one stats row per partition, never a scan of messages.

-- Partitions matching every given filter (NULL = any). p_search is a literal, case-insensitive
-- substring of the partition name (position(), not LIKE, so % and _ are plain characters).
CREATE OR REPLACE FUNCTION qg_partitions_matching(p_queue text, p_namespace text, p_task text, p_search text)
RETURNS TABLE (pid uuid, qid uuid) LANGUAGE sql STABLE AS $$
    SELECT p.id, q.id
    FROM partitions p JOIN queues q ON q.id = p.queue_id
    WHERE (p_queue IS NULL OR q.name = p_queue)
      AND (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task)
      AND (p_search IS NULL OR position(lower(p_search) IN lower(p.name)) > 0);
$$;

-- How many partitions match, and when the stats were last rolled up (NULL before the first run).
CREATE OR REPLACE FUNCTION qg_partitions_total(p_queue text, p_namespace text, p_task text, p_search text)
RETURNS TABLE (total bigint, stats_at timestamptz) LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM qg_partitions_matching(p_queue, p_namespace, p_task, p_search)),
           (SELECT max(s.computed_at) FROM stats s WHERE s.scope = 'system');
$$;

-- A page of the matching partitions. p_sort is one of name, queue, createdAt, total, pending,
-- lag, lastActivity (checked by the caller); every order ends with the partition id, so pages
-- neither overlap nor skip while the data stands still.
CREATE OR REPLACE FUNCTION qg_list_partitions(p_queue text, p_namespace text, p_task text, p_search text,
    p_sort text, p_desc boolean, p_limit integer, p_offset integer)
RETURNS TABLE (id text, name text, queue_name text, queue_id text, namespace text, task text,
               created_at timestamptz, total bigint, pending bigint, processing bigint, completed bigint,
               dead_letter bigint, consumer_groups integer, active_leases integer, max_time_lag bigint,
               oldest_at timestamptz, newest_at timestamptz, last_activity timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT p.id::text, p.name, q.name, q.id::text, q.namespace, q.task, p.created_at,
           coalesce(s.total, 0), coalesce(s.pending, 0), coalesce(s.processing, 0), coalesce(s.completed, 0),
           coalesce(s.dead_letter, 0), coalesce(s.consumer_groups, 0), coalesce(s.active_leases, 0),
           coalesce(s.time_lag_max, 0), s.oldest_message_at, s.newest_message_at, h.last_activity_at
    FROM qg_partitions_matching(p_queue, p_namespace, p_task, p_search) x
    JOIN partitions p ON p.id = x.pid
    JOIN partition_heads h ON h.partition_id = x.pid
    JOIN queues q ON q.id = x.qid
    LEFT JOIN stats s ON s.scope = 'partition' AND s.key = p.id::text
    ORDER BY
        CASE WHEN p_sort = 'name' AND NOT p_desc THEN p.name END,
        CASE WHEN p_sort = 'name' AND p_desc THEN p.name END DESC,
        CASE WHEN p_sort = 'queue' AND NOT p_desc THEN q.name END,
        CASE WHEN p_sort = 'queue' AND p_desc THEN q.name END DESC,
        CASE WHEN p_sort = 'createdAt' AND NOT p_desc THEN p.created_at END,
        CASE WHEN p_sort = 'createdAt' AND p_desc THEN p.created_at END DESC,
        CASE WHEN p_sort = 'lastActivity' AND NOT p_desc THEN h.last_activity_at END,
        CASE WHEN p_sort = 'lastActivity' AND p_desc THEN h.last_activity_at END DESC,
        CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'total' THEN coalesce(s.total, 0)
            WHEN 'pending' THEN coalesce(s.pending, 0) WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END,
        CASE WHEN p_desc THEN CASE p_sort WHEN 'total' THEN coalesce(s.total, 0)
            WHEN 'pending' THEN coalesce(s.pending, 0) WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END DESC,
        p.name, q.name, p.id
    LIMIT p_limit OFFSET p_offset;
$$;
