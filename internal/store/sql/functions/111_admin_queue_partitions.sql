-- The partitions of one queue as GET /api/v1/resources/queues/:queue and GET
-- /api/v1/status/queues/:queue page them (docs/api/admin-api.md §1, §5.2; dashboard M7, M9):
-- searched, sorted and paged in the database, counters from the stats job's partition rows, so
-- a page of a queue with 10,000 partitions reads one page of rows.

-- How many of the queue's partitions match p_search (a literal, case-insensitive substring of
-- the partition name; NULL = all).
CREATE OR REPLACE FUNCTION qg_queue_partition_count(p_queue text, p_search text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM queues q JOIN partitions p ON p.queue_id = q.id
    WHERE q.name = p_queue AND (p_search IS NULL OR position(lower(p_search) IN lower(p.name)) > 0);
$$;

-- One page of the queue's matching partitions. p_sort is one of name, createdAt, total,
-- pending, lag, lastActivity (checked by the caller); every order ends with the partition name
-- and id. last_activity is the later of the partition's last write and its last consumption.
-- Ordered by name or createdAt, the page is cut from the partitions alone and only its rows
-- read their stats (joining the stats of 10,000 partitions first took most of a second); the
-- other orders need every matching partition's stats. Each branch is gated on p_sort (a
-- one-time filter), and the outer order only sorts the page.
CREATE OR REPLACE FUNCTION qg_queue_partition_page(p_queue text, p_search text, p_sort text, p_desc boolean,
    p_limit integer, p_offset integer)
RETURNS TABLE (id text, name text, created_at timestamptz, total bigint, pending bigint, processing bigint,
               dead_letter bigint, consumer_groups integer, active_leases integer, consumed bigint,
               batches bigint, last_activity timestamptz, oldest_at timestamptz, newest_at timestamptz,
               max_time_lag bigint)
LANGUAGE sql STABLE AS $$
    SELECT x.* FROM (
        (SELECT p.id::text, p.name, p.created_at, coalesce(s.total, 0), coalesce(s.pending, 0),
                coalesce(s.processing, 0), coalesce(s.dead_letter, 0), coalesce(s.consumer_groups, 0),
                coalesce(s.active_leases, 0), coalesce(s.messages_consumed, 0), coalesce(s.batches_consumed, 0),
                greatest(p.last_activity_at, s.last_consumed_at), s.oldest_message_at, s.newest_message_at,
                coalesce(s.time_lag_max, 0)
         FROM (SELECT p.id, p.name, p.created_at, h.last_activity_at
               FROM queues q
               JOIN partitions p ON p.queue_id = q.id
               JOIN partition_heads h ON h.partition_id = p.id
               WHERE p_sort IN ('name', 'createdAt') AND q.name = p_queue
                 AND (p_search IS NULL OR position(lower(p_search) IN lower(p.name)) > 0)
               ORDER BY
                   CASE WHEN p_sort = 'name' AND NOT p_desc THEN p.name END,
                   CASE WHEN p_sort = 'name' AND p_desc THEN p.name END DESC,
                   CASE WHEN p_sort = 'createdAt' AND NOT p_desc THEN p.created_at END,
                   CASE WHEN p_sort = 'createdAt' AND p_desc THEN p.created_at END DESC,
                   p.name, p.id
               LIMIT p_limit OFFSET p_offset) p
         LEFT JOIN stats s ON s.scope = 'partition' AND s.key = p.id::text)
        UNION ALL
        (SELECT p.id::text, p.name, p.created_at, coalesce(s.total, 0), coalesce(s.pending, 0),
                coalesce(s.processing, 0), coalesce(s.dead_letter, 0), coalesce(s.consumer_groups, 0),
                coalesce(s.active_leases, 0), coalesce(s.messages_consumed, 0), coalesce(s.batches_consumed, 0),
                greatest(p.last_activity_at, s.last_consumed_at), s.oldest_message_at, s.newest_message_at,
                coalesce(s.time_lag_max, 0)
         FROM queues q
         JOIN (SELECT p.*, h.last_activity_at FROM partitions p JOIN partition_heads h ON h.partition_id = p.id) p
           ON p.queue_id = q.id
         LEFT JOIN stats s ON s.scope = 'partition' AND s.key = p.id::text
         WHERE p_sort NOT IN ('name', 'createdAt') AND q.name = p_queue
           AND (p_search IS NULL OR position(lower(p_search) IN lower(p.name)) > 0)
         ORDER BY
             CASE WHEN p_sort = 'lastActivity' AND NOT p_desc THEN greatest(p.last_activity_at, s.last_consumed_at) END,
             CASE WHEN p_sort = 'lastActivity' AND p_desc THEN greatest(p.last_activity_at, s.last_consumed_at) END DESC NULLS LAST,
             CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'total' THEN coalesce(s.total, 0)
                 WHEN 'pending' THEN coalesce(s.pending, 0) WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END,
             CASE WHEN p_desc THEN CASE p_sort WHEN 'total' THEN coalesce(s.total, 0)
                 WHEN 'pending' THEN coalesce(s.pending, 0) WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END DESC,
             p.name, p.id
         LIMIT p_limit OFFSET p_offset)
    ) x (id, name, created_at, total, pending, processing, dead_letter, consumer_groups, active_leases,
         consumed, batches, last_activity, oldest_at, newest_at, max_time_lag)
    ORDER BY
        CASE WHEN p_sort = 'name' AND NOT p_desc THEN x.name END,
        CASE WHEN p_sort = 'name' AND p_desc THEN x.name END DESC,
        CASE WHEN p_sort = 'createdAt' AND NOT p_desc THEN x.created_at END,
        CASE WHEN p_sort = 'createdAt' AND p_desc THEN x.created_at END DESC,
        CASE WHEN p_sort = 'lastActivity' AND NOT p_desc THEN x.last_activity END,
        CASE WHEN p_sort = 'lastActivity' AND p_desc THEN x.last_activity END DESC NULLS LAST,
        CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'total' THEN x.total
            WHEN 'pending' THEN x.pending WHEN 'lag' THEN x.max_time_lag END END,
        CASE WHEN p_desc THEN CASE p_sort WHEN 'total' THEN x.total
            WHEN 'pending' THEN x.pending WHEN 'lag' THEN x.max_time_lag END END DESC,
        x.name, x.id;
$$;

-- The queue's row as JSON (column names as keys), for the 16 options of the queue detail: the
-- Go side reads each option by its column from mq.OptionTable, so a new option needs no change
-- here. NULL for an unknown queue.
CREATE OR REPLACE FUNCTION qg_queue_row(p_queue text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT to_jsonb(q) FROM queues q WHERE q.name = p_queue;
$$;
