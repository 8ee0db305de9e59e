-- Messages (docs/api/admin-api.md §2): listing, detail and removal.

-- Lists stored messages created between p_from and p_to (default: the last hour), newest
-- first, with their state for every consumer, for queue mode, and per named group. Each
-- matching partition is walked backwards by position, which is the createdAt order inside a
-- partition (docs/api/concepts.md §4.2), taking at most p_offset + p_limit rows, so no index on
-- createdAt is needed on the hot write path. has_queue_mode and bus_groups describe the
-- consumers of the queues in the page and repeat on every row.
--
-- Across many partitions (10,000 queues) walking every one, and computing the state of every
-- row found, took seconds (docs/decisions.md). So: a partition's last_message_at is never older
-- than its newest stored message (push sets it; deletions only make it larger than needed), so
-- partitions written before the window starts are skipped; the p_limit + p_offset partitions
-- written last are walked first, and the oldest createdAt among the page-sized set of rows they
-- give bounds the rest: a partition last written before that bound cannot hold a row of the
-- page, and rows older than it cannot be in it (ties are kept). The state is computed only for
-- the page's rows unless p_status filters on it.
CREATE OR REPLACE FUNCTION qg_list_messages(
    p_queue text, p_partition text, p_namespace text, p_task text, p_status text,
    p_from timestamptz, p_to timestamptz, p_limit integer, p_offset integer, p_now timestamptz,
    p_key text DEFAULT NULL, p_trace uuid DEFAULT NULL)
RETURNS TABLE (id text, transaction_id text, partition_id text, queue_name text, partition_name text,
               namespace text, task text, status text, queue_status text, consumed_by bigint,
               total_groups bigint, trace_id text, producer_sub text, priority integer,
               created_at timestamptz, lease_expires_at timestamptz,
               has_queue_mode boolean, bus_groups bigint)
LANGUAGE sql STABLE AS $$
    WITH parts AS (
        SELECT p.id, p.name, q.id AS qid, q.name AS qname, q.namespace, q.task, q.priority,
               coalesce(h.last_message_at, 'infinity') AS written
        FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
        WHERE (p_queue IS NULL OR q.name = p_queue) AND (p_partition IS NULL OR p.name = p_partition)
          AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
    ), win AS (
        -- The window: the last hour by default, unbounded for a lookup by key or traceId.
        SELECT coalesce(p_from, CASE WHEN p_key IS NULL AND p_trace IS NULL
                                     THEN coalesce(p_now, now()) - interval '1 hour' ELSE '-infinity' END) AS lo,
               coalesce(p_to, CASE WHEN p_key IS NULL AND p_trace IS NULL
                                   THEN coalesce(p_now, now()) ELSE 'infinity' END) AS hi
    ), cand AS (
        -- Partitions that can hold a message of the window (none for a lookup by key or trace).
        SELECT pt.* FROM parts pt, win
        WHERE p_key IS NULL AND p_trace IS NULL AND pt.written >= win.lo
    ), first_rows AS (
        -- The rows of the partitions written last, newest first: enough for a page.
        SELECT x.created_at
        FROM (SELECT c.id FROM cand c ORDER BY c.written DESC LIMIT p_limit + p_offset) c
        CROSS JOIN win
        CROSS JOIN LATERAL (
            SELECT m.created_at FROM messages m
            WHERE m.partition_id = c.id AND m.created_at >= win.lo AND m.created_at <= win.hi
              AND (p_status IS NULL OR qg_message_status(m.partition_id, m.position, m.id, NULL, p_now) = p_status)
            ORDER BY m.position DESC
            LIMIT p_limit + p_offset) x
        ORDER BY x.created_at DESC
        LIMIT p_limit + p_offset
    ), bound AS (
        -- No row of the page is older than the oldest of a full page of rows.
        SELECT greatest(w.lo, CASE WHEN count(f.created_at) >= p_limit + p_offset THEN min(f.created_at) END) AS lo
        FROM win w LEFT JOIN first_rows f ON true
        GROUP BY w.lo
    ), found AS (
        -- Three branches, each gated on its parameters (a one-time filter, so the others cost
        -- nothing): the window walked per partition newest first; a key probed in each
        -- partition's (partition_id, transaction_id) key; a traceId by its index.
        SELECT x.*, pt.name AS pname, pt.qid, pt.qname, pt.namespace, pt.task, pt.priority
        FROM cand pt
        CROSS JOIN bound
        CROSS JOIN win
        CROSS JOIN LATERAL (
            SELECT m.partition_id, m.position, m.id, m.transaction_id, m.trace_id, m.producer_sub, m.created_at
            FROM messages m
            WHERE m.partition_id = pt.id
              AND m.created_at >= bound.lo AND m.created_at <= win.hi
              AND (p_status IS NULL OR qg_message_status(m.partition_id, m.position, m.id, NULL, p_now) = p_status)
            ORDER BY m.position DESC
            LIMIT p_limit + p_offset) x
        WHERE pt.written >= bound.lo
        UNION ALL
        SELECT m.partition_id, m.position, m.id, m.transaction_id, m.trace_id, m.producer_sub, m.created_at,
               pt.name, pt.qid, pt.qname, pt.namespace, pt.task, pt.priority
        FROM parts pt
        CROSS JOIN win
        JOIN messages m ON m.partition_id = pt.id AND m.transaction_id = p_key
        WHERE p_key IS NOT NULL
          AND (p_trace IS NULL OR m.trace_id = p_trace)
          AND m.created_at >= win.lo AND m.created_at <= win.hi
          AND (p_status IS NULL OR qg_message_status(m.partition_id, m.position, m.id, NULL, p_now) = p_status)
        UNION ALL
        SELECT m.partition_id, m.position, m.id, m.transaction_id, m.trace_id, m.producer_sub, m.created_at,
               pt.name, pt.qid, pt.qname, pt.namespace, pt.task, pt.priority
        FROM messages m
        JOIN parts pt ON pt.id = m.partition_id
        CROSS JOIN win
        WHERE p_key IS NULL AND p_trace IS NOT NULL AND m.trace_id = p_trace AND m.trace_id IS NOT NULL
          AND m.created_at >= win.lo AND m.created_at <= win.hi
          AND (p_status IS NULL OR qg_message_status(m.partition_id, m.position, m.id, NULL, p_now) = p_status)
    ), page AS (
        SELECT f.* FROM found f
        ORDER BY f.created_at DESC, f.partition_id, f.position DESC
        LIMIT p_limit OFFSET p_offset
    ), mode AS (
        SELECT coalesce(bool_or(c.consumer_group = '__QUEUE_MODE__'), false) AS has_qm,
               count(DISTINCT c.consumer_group) FILTER (WHERE c.consumer_group <> '__QUEUE_MODE__') AS bus
        FROM consumers c WHERE c.queue_id IN (SELECT pg.qid FROM page pg)
    )
    SELECT pg.id::text, pg.transaction_id, pg.partition_id::text, pg.qname, pg.pname, pg.namespace, pg.task,
           qg_message_status(pg.partition_id, pg.position, pg.id, NULL, p_now),
           qg_message_status(pg.partition_id, pg.position, pg.id, '__QUEUE_MODE__', p_now),
           (SELECT count(*) FROM consumers c WHERE c.partition_id = pg.partition_id
              AND c.consumer_group <> '__QUEUE_MODE__'
              AND (c.cursor >= pg.position
                   OR EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = pg.partition_id
                                AND k.consumer_group = c.consumer_group AND k.position = pg.position))
              AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = pg.partition_id
                                AND r.consumer_group = c.consumer_group AND r.position = pg.position)),
           (SELECT count(*) FROM consumers c WHERE c.partition_id = pg.partition_id
              AND c.consumer_group <> '__QUEUE_MODE__'),
           pg.trace_id::text, pg.producer_sub, pg.priority, pg.created_at,
           qg_message_lease(pg.partition_id, pg.position, p_now), mode.has_qm, mode.bus
    FROM page pg, mode
    ORDER BY pg.created_at DESC, pg.partition_id, pg.position DESC;
$$;

-- One message with its payload, state, most recent DLQ entry and queue options.
CREATE OR REPLACE FUNCTION qg_message_detail(p_pid uuid, p_key text, p_now timestamptz)
RETURNS TABLE (id text, transaction_id text, partition_id text, queue_name text, partition_name text,
               namespace text, task text, status text, payload text, encrypted boolean, trace_id text,
               producer_sub text, created_at timestamptz, error_message text, retry_count integer,
               lease_expires_at timestamptz, lease_time integer, retry_limit integer,
               retry_delay integer, ttl integer, priority integer)
LANGUAGE sql STABLE AS $$
    SELECT m.id::text, m.transaction_id, m.partition_id::text, q.name, p.name, q.namespace, q.task,
           qg_message_status(m.partition_id, m.position, m.id, NULL, p_now), m.payload::text, m.encrypted,
           m.trace_id::text, m.producer_sub, m.created_at, d.error_message, coalesce(d.retry_count, 0),
           qg_message_lease(m.partition_id, m.position, p_now),
           q.lease_time, q.retry_limit, q.retry_delay, q.ttl, q.priority
    FROM messages m
    JOIN partitions p ON p.id = m.partition_id
    JOIN queues q ON q.id = p.queue_id
    LEFT JOIN LATERAL (SELECT d.error_message, d.retry_count FROM dlq d
                       WHERE d.partition_id = m.partition_id AND d.message_id = m.id
                       ORDER BY d.failed_at DESC, d.id DESC LIMIT 1) d ON true
    WHERE m.partition_id = p_pid AND m.transaction_id = p_key;
$$;

-- Every consumer of a message's partition: whether it consumed the message, and the expiry of
-- its live lease when that lease's batch holds the message.
CREATE OR REPLACE FUNCTION qg_message_consumers(p_pid uuid, p_key text, p_now timestamptz)
RETURNS TABLE (consumer_group text, consumed boolean, lease_expires_at timestamptz)
LANGUAGE sql STABLE AS $$
    -- passed, or skipped, and not in the group's requeued set, whose requeue batch holds it
    -- (docs/api/concepts.md §9.3, §10)
    SELECT c.consumer_group,
           (c.cursor >= m.position
              OR EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = m.partition_id
                           AND k.consumer_group = c.consumer_group AND k.position = m.position))
             AND r.position IS NULL,
           CASE WHEN c.lease_expires_at > coalesce(p_now, now())
                     AND ((c.cursor < m.position AND m.position <= c.batch_end) OR coalesce(r.in_batch, false))
                THEN c.lease_expires_at END
    FROM messages m
    JOIN consumers c ON c.partition_id = m.partition_id
    LEFT JOIN requeued r ON r.partition_id = m.partition_id AND r.consumer_group = c.consumer_group
                        AND r.position = m.position
    WHERE m.partition_id = p_pid AND m.transaction_id = p_key AND qg_sees_partition(p_pid)
    ORDER BY c.consumer_group;
$$;

-- Removes a message with its DLQ entries (its trace records go through their foreign key) and
-- keeps its key taken until its dedup window ends (docs/api/concepts.md §4.3) with a tombstone. The
-- partition is locked first, as every writer does, so a concurrent push of the same key sees
-- either the message or the tombstone. Returns false when there is no such message.
CREATE OR REPLACE FUNCTION qg_delete_message(p_pid uuid, p_key text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_id      uuid;
    v_created timestamptz;
BEGIN
    IF NOT qg_sees_partition(p_pid) THEN
        RETURN false; -- another tenant's message is no message
    END IF;
    PERFORM 1 FROM partitions p WHERE p.id = p_pid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM messages m WHERE m.partition_id = p_pid AND m.transaction_id = p_key
    RETURNING m.id, m.created_at INTO v_id, v_created;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = v_id;
    INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at)
    VALUES (p_pid, p_key, v_id, v_created)
    ON CONFLICT (partition_id, transaction_id, tseg)
    DO UPDATE SET message_id = EXCLUDED.message_id, created_at = EXCLUDED.created_at;
    RETURN true;
END $$;
