-- Status routes (docs/api/admin-api.md §5). Counters come from the stats job's tables and rates from the
-- per-minute metrics, so a request reads rows per queue, partition or minute, never messages.
-- Which queues and partitions exist is read live. Filters $queue, $namespace, $task: NULL = any.

-- Counters of the queues matching the filters, and when the stats were computed.
-- $1 queue, $2 namespace, $3 task.
-- name: status_counts
SELECT coalesce(sum(s.total), 0)::bigint, coalesce(sum(s.pending + s.processing), 0)::bigint,
       coalesce(sum(s.processing), 0)::bigint, coalesce(sum(s.dead_letter), 0)::bigint, coalesce(sum(s.dlq_partitions), 0)::bigint,
       coalesce(sum(s.active_leases), 0)::bigint, coalesce(sum(s.leased_partitions), 0)::bigint,
       coalesce(sum(s.leased_messages), 0)::bigint,
       (SELECT max(x.computed_at) FROM stats x WHERE x.scope = 'system')
FROM queues q JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
WHERE ($1::text IS NULL OR q.name = $1) AND ($2::text IS NULL OR q.namespace = $2)
  AND ($3::text IS NULL OR q.task = $3)

-- The queues matching the filters with their partitions and consumed totals: at most 100, those
-- with the most messages consumed (acked) from $4 to $5 first (docs/api/admin-api.md §5.1), so the
-- answer stays bounded at 10,000 queues; the full list is GET /api/v1/status/queues.
-- name: status_queue_list
SELECT q.id::text, q.name, q.namespace, q.task,
       (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id), coalesce(s.messages_consumed, 0)
FROM queues q LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
LEFT JOIN (SELECT m.queue, sum(m.ack_success) AS n
           FROM metrics_queue_minute m
           WHERE m.minute >= date_trunc('minute', $4::timestamptz) AND m.minute <= $5
           GROUP BY m.queue) c ON c.queue = q.name
WHERE ($1::text IS NULL OR q.name = $1) AND ($2::text IS NULL OR q.namespace = $2)
  AND ($3::text IS NULL OR q.task = $3)
ORDER BY coalesce(c.n, 0) DESC, q.name
LIMIT 100

-- The most frequent DLQ reasons of the matching queues.
-- name: status_top_errors
SELECT e.error_message, sum(e.entries)::bigint
FROM stats_dlq_errors e JOIN queues q ON q.id = e.queue_id
WHERE ($1::text IS NULL OR q.name = $1) AND ($2::text IS NULL OR q.namespace = $2)
  AND ($3::text IS NULL OR q.task = $3)
GROUP BY e.error_message
ORDER BY 2 DESC, 1
LIMIT 10

-- Throughput per bucket of $3 minutes from $1 to $2 (every bucket, zeros where nothing
-- happened). Message figures come from the per-queue metrics, so the filters ($4 queue,
-- $5 namespace, $6 task) apply; instance figures (CPU, memory, pool, database errors) are the
-- cluster's whatever the filters. CPU is the average per instance.
-- name: status_throughput
WITH span AS (
    SELECT ($3::integer * interval '1 minute') AS step,
           date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01') AS first
), buckets AS (
    SELECT generate_series(span.first, $2::timestamptz, span.step) AS b FROM span
), qm AS (
    SELECT date_bin(span.step, m.minute, timestamptz '2000-01-01') AS b,
           sum(m.push_messages) AS ingested, sum(m.ack_success) AS processed, sum(m.pop_messages) AS pops,
           sum(m.lag_ms_sum) AS lag_sum, sum(m.lag_count) AS lag_n, max(m.lag_ms_max) AS lag_max,
           sum(m.ack_failed) AS ack_failed, sum(m.dlq) AS dlq
    FROM metrics_queue_minute m CROSS JOIN span
    WHERE m.minute >= span.first AND m.minute <= $2
      AND (($4::text IS NULL AND $5::text IS NULL AND $6::text IS NULL)
           OR m.queue IN (SELECT q.name FROM queues q
                          WHERE ($4::text IS NULL OR q.name = $4) AND ($5::text IS NULL OR q.namespace = $5)
                            AND ($6::text IS NULL OR q.task = $6)))
    GROUP BY 1
), wm AS (
    SELECT w.minute, sum(w.db_errors) AS db_errors, sum(w.cpu_user_us) AS cpu_user,
           sum(w.cpu_sys_us) AS cpu_sys, count(*) AS workers, max(w.rss_bytes) AS rss,
           sum(w.pool_active) AS pool_active, sum(w.pool_idle) AS pool_idle, sum(w.pool_size) AS pool_size
    FROM metrics_worker_minute w CROSS JOIN span
    WHERE w.minute >= span.first AND w.minute <= $2
    GROUP BY w.minute
), wb AS (
    SELECT date_bin(span.step, wm.minute, timestamptz '2000-01-01') AS b, sum(wm.db_errors) AS db_errors,
           sum(wm.cpu_user)::float8 / sum(wm.workers) / 600000 AS cpu_user_pct,
           sum(wm.cpu_sys)::float8 / sum(wm.workers) / 600000 AS cpu_sys_pct,
           max(wm.rss) AS rss, avg(wm.pool_active) AS pool_active, avg(wm.pool_idle) AS pool_idle,
           avg(wm.pool_size) AS pool_size
    FROM wm CROSS JOIN span GROUP BY 1
)
SELECT b.b, coalesce(qm.ingested, 0)::bigint, coalesce(qm.processed, 0)::bigint, coalesce(qm.pops, 0)::bigint,
       coalesce(qm.lag_sum / nullif(qm.lag_n, 0), 0)::float8, coalesce(qm.lag_max, 0)::float8,
       coalesce(wb.db_errors, 0)::bigint, coalesce(qm.ack_failed, 0)::bigint, coalesce(qm.dlq, 0)::bigint,
       coalesce(wb.cpu_user_pct, 0)::float8, coalesce(wb.cpu_sys_pct, 0)::float8,
       coalesce(wb.rss, 0)::bigint, coalesce(wb.pool_active, 0)::float8, coalesce(wb.pool_idle, 0)::float8,
       coalesce(wb.pool_size, 0)::float8
FROM buckets b LEFT JOIN qm ON qm.b = b.b LEFT JOIN wb ON wb.b = b.b
ORDER BY b.b

-- Request and message totals from $1 to $2 for the matching queues ($3 queue, $4 namespace,
-- $5 task), and the cluster's database errors.
-- name: status_window
SELECT coalesce(sum(m.push_requests), 0)::bigint, coalesce(sum(m.pop_requests), 0)::bigint,
       coalesce(sum(m.ack_requests), 0)::bigint, coalesce(sum(m.push_messages), 0)::bigint,
       coalesce(sum(m.pop_messages), 0)::bigint, coalesce(sum(m.ack_messages), 0)::bigint,
       coalesce(sum(m.ack_success), 0)::bigint, coalesce(sum(m.ack_failed), 0)::bigint,
       coalesce(sum(m.dlq), 0)::bigint,
       (SELECT coalesce(sum(w.db_errors), 0)::bigint FROM metrics_worker_minute w
        WHERE w.minute >= date_trunc('minute', $1::timestamptz) AND w.minute <= $2)
FROM metrics_queue_minute m
WHERE m.minute >= date_trunc('minute', $1::timestamptz) AND m.minute <= $2
  AND (($3::text IS NULL AND $4::text IS NULL AND $5::text IS NULL)
       OR m.queue IN (SELECT q.name FROM queues q
                      WHERE ($3::text IS NULL OR q.name = $3) AND ($4::text IS NULL OR q.namespace = $4)
                        AND ($5::text IS NULL OR q.task = $5)))

-- Broker instances that flushed metrics between $1 and $2.
-- name: status_workers
SELECT w.hostname, w.worker_id, (array_agg(w.pid ORDER BY w.minute DESC))[1], max(w.updated_at)
FROM metrics_worker_minute w
WHERE w.minute >= date_trunc('minute', $1::timestamptz) AND w.minute <= $2
GROUP BY w.hostname, w.worker_id
ORDER BY w.worker_id, w.hostname

-- One queue with its configuration and counters. $1 queue name.
-- name: status_queue
SELECT q.id::text, q.name, q.namespace, q.task, q.priority, q.created_at, q.lease_time, q.retry_limit,
       q.retry_delay, q.ttl, q.max_size, q.dead_letter_queue, coalesce(s.total, 0),
       coalesce(s.pending + s.processing, 0), coalesce(s.processing, 0), coalesce(s.dead_letter, 0)
FROM queues q LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
WHERE q.name = $1

-- name: queue_exists
SELECT EXISTS (SELECT 1 FROM queues q WHERE q.name = $1)

-- A queue's stored messages, newest first, with their state (the admin listing's function).
-- name: status_queue_messages
SELECT id, transaction_id, partition_id, queue_name, partition_name, status, created_at
FROM qg_list_messages(p_queue => $1, p_partition => NULL, p_namespace => NULL, p_task => NULL, p_status => NULL,
                      p_from => '-infinity', p_to => 'infinity', p_limit => $2, p_offset => $3, p_now => $4)

-- Messages written per bucket ($3: minute, hour or day) from $1 to $2 for the matching queues
-- ($4 queue, $5 namespace, $6 task), every bucket.
-- name: status_analytics
WITH buckets AS (
    SELECT generate_series(date_trunc($3, $1::timestamptz, 'UTC'), $2::timestamptz, ('1 ' || $3)::interval) AS b
), written AS (
    SELECT date_trunc($3, m.minute, 'UTC') AS b, sum(m.push_messages) AS n
    FROM metrics_queue_minute m
    WHERE m.minute >= date_trunc($3, $1::timestamptz, 'UTC') AND m.minute <= $2
      AND (($4::text IS NULL AND $5::text IS NULL AND $6::text IS NULL)
           OR m.queue IN (SELECT q.name FROM queues q
                          WHERE ($4::text IS NULL OR q.name = $4) AND ($5::text IS NULL OR q.namespace = $5)
                            AND ($6::text IS NULL OR q.task = $6)))
    GROUP BY 1
)
SELECT b.b, coalesce(w.n, 0)::bigint FROM buckets b LEFT JOIN written w ON w.b = b.b ORDER BY b.b

-- The database this broker writes to, as the spool records its owner (docs/api/operations.md
-- §4.2): the cluster's system identifier and the database's name.
-- name: database_identity
SELECT (SELECT system_identifier::text FROM pg_control_system()), current_database()
