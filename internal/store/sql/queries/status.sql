-- Status routes (docs/api/admin-api.md §5). Counters come from the stats job's tables and rates from the
-- per-minute metrics, so a request reads rows per queue, partition or minute, never messages.
-- Which queues and partitions exist is read live. Filters @queue, @namespace, @task: NULL = any.
-- Every column is named (AS), and the Go side scans rows by those names (pgx.RowToStructByName).

-- Counters of the queues matching the filters, and when the stats were computed.
-- name: status_counts
SELECT coalesce(sum(s.total), 0)::bigint AS total, coalesce(sum(s.pending + s.processing), 0)::bigint AS unconsumed,
       coalesce(sum(s.processing), 0)::bigint AS processing, coalesce(sum(s.dead_letter), 0)::bigint AS dead_letter,
       coalesce(sum(s.dlq_partitions), 0)::bigint AS dlq_partitions,
       coalesce(sum(s.active_leases), 0)::bigint AS active_leases,
       coalesce(sum(s.leased_partitions), 0)::bigint AS leased_partitions,
       coalesce(sum(s.leased_messages), 0)::bigint AS leased_messages,
       (SELECT max(x.computed_at) FROM stats x WHERE x.scope = 'system') AS stats_at
FROM queues q JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
WHERE (@queue::text IS NULL OR q.name = @queue) AND (@namespace::text IS NULL OR q.namespace = @namespace)
  AND (@task::text IS NULL OR q.task = @task)

-- The queues matching the filters with their partitions and consumed totals: at most 100, those
-- with the most messages consumed (acked) from @from to @to first (docs/api/admin-api.md §5.1), so
-- the answer stays bounded at 10,000 queues; the full list is GET /api/v1/status/queues.
-- name: status_queue_list
SELECT q.id::text AS id, q.name AS name, q.namespace AS namespace, q.task AS task,
       (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id) AS partitions,
       coalesce(s.messages_consumed, 0) AS consumed
FROM queues q LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
LEFT JOIN (SELECT m.tenant, m.queue, sum(m.ack_success) AS n
           FROM metrics_queue_minute m
           WHERE m.minute >= date_trunc('minute', @from::timestamptz) AND m.minute <= @to
           GROUP BY m.tenant, m.queue) c ON c.tenant = q.tenant AND c.queue = q.name
WHERE (@queue::text IS NULL OR q.name = @queue) AND (@namespace::text IS NULL OR q.namespace = @namespace)
  AND (@task::text IS NULL OR q.task = @task)
ORDER BY coalesce(c.n, 0) DESC, q.name
LIMIT 100

-- The most frequent DLQ reasons of the matching queues.
-- name: status_top_errors
SELECT e.error_message AS error, sum(e.entries)::bigint AS count
FROM stats_dlq_errors e JOIN queues q ON q.id = e.queue_id
WHERE (@queue::text IS NULL OR q.name = @queue) AND (@namespace::text IS NULL OR q.namespace = @namespace)
  AND (@task::text IS NULL OR q.task = @task)
GROUP BY e.error_message
ORDER BY 2 DESC, 1
LIMIT 10

-- Throughput per bucket of @bucket_minutes minutes from @from to @to (every bucket, zeros where
-- nothing happened). Message figures come from the per-queue metrics, so the filters apply;
-- instance figures (CPU, memory, pool, database errors) are the cluster's whatever the filters.
-- CPU is the average per instance.
-- name: status_throughput
WITH span AS (
    SELECT (@bucket_minutes::integer * interval '1 minute') AS step,
           date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01') AS first
), buckets AS (
    SELECT generate_series(span.first, @to::timestamptz, span.step) AS b FROM span
), qm AS (
    SELECT date_bin(span.step, m.minute, timestamptz '2000-01-01') AS b,
           sum(m.push_messages) AS ingested, sum(m.ack_success) AS processed, sum(m.pop_messages) AS pops,
           sum(m.lag_ms_sum) AS lag_sum, sum(m.lag_count) AS lag_n, max(m.lag_ms_max) AS lag_max,
           sum(m.ack_failed) AS ack_failed, sum(m.dlq) AS dlq
    FROM metrics_queue_minute m CROSS JOIN span
    WHERE m.minute >= span.first AND m.minute <= @to
      AND ((@queue::text IS NULL AND @namespace::text IS NULL AND @task::text IS NULL AND qg_scope_sees(m.tenant))
           OR (m.tenant, m.queue) IN (SELECT q.tenant, q.name FROM queues q
                          WHERE (@queue::text IS NULL OR q.name = @queue)
                            AND (@namespace::text IS NULL OR q.namespace = @namespace)
                            AND (@task::text IS NULL OR q.task = @task)))
    GROUP BY 1
), wm AS (
    SELECT w.minute, sum(w.db_errors) AS db_errors, sum(w.cpu_user_us) AS cpu_user,
           sum(w.cpu_sys_us) AS cpu_sys, count(*) AS workers, max(w.rss_bytes) AS rss,
           sum(w.pool_active) AS pool_active, sum(w.pool_idle) AS pool_idle, sum(w.pool_size) AS pool_size
    FROM metrics_worker_minute w CROSS JOIN span
    WHERE w.minute >= span.first AND w.minute <= @to
    GROUP BY w.minute
), wb AS (
    SELECT date_bin(span.step, wm.minute, timestamptz '2000-01-01') AS b, sum(wm.db_errors) AS db_errors,
           sum(wm.cpu_user)::float8 / sum(wm.workers) / 600000 AS cpu_user_pct,
           sum(wm.cpu_sys)::float8 / sum(wm.workers) / 600000 AS cpu_sys_pct,
           max(wm.rss) AS rss, avg(wm.pool_active) AS pool_active, avg(wm.pool_idle) AS pool_idle,
           avg(wm.pool_size) AS pool_size
    FROM wm CROSS JOIN span GROUP BY 1
)
SELECT b.b AS bucket, coalesce(qm.ingested, 0)::bigint AS ingested, coalesce(qm.processed, 0)::bigint AS processed,
       coalesce(qm.pops, 0)::bigint AS popped, coalesce(qm.lag_sum / nullif(qm.lag_n, 0), 0)::float8 AS avg_lag_ms,
       coalesce(qm.lag_max, 0)::float8 AS max_lag_ms, coalesce(wb.db_errors, 0)::bigint AS db_errors,
       coalesce(qm.ack_failed, 0)::bigint AS ack_failed, coalesce(qm.dlq, 0)::bigint AS dlq,
       coalesce(wb.cpu_user_pct, 0)::float8 AS cpu_user_pct, coalesce(wb.cpu_sys_pct, 0)::float8 AS cpu_sys_pct,
       coalesce(wb.rss, 0)::bigint AS rss_bytes, coalesce(wb.pool_active, 0)::float8 AS pool_active,
       coalesce(wb.pool_idle, 0)::float8 AS pool_idle, coalesce(wb.pool_size, 0)::float8 AS pool_size
FROM buckets b LEFT JOIN qm ON qm.b = b.b LEFT JOIN wb ON wb.b = b.b
ORDER BY b.b

-- Request and message totals from @from to @to for the matching queues, and the cluster's
-- database errors.
-- name: status_window
SELECT coalesce(sum(m.push_requests), 0)::bigint AS push_requests, coalesce(sum(m.pop_requests), 0)::bigint AS pop_requests,
       coalesce(sum(m.ack_requests), 0)::bigint AS ack_requests, coalesce(sum(m.push_messages), 0)::bigint AS push_messages,
       coalesce(sum(m.pop_messages), 0)::bigint AS pop_messages, coalesce(sum(m.ack_messages), 0)::bigint AS ack_messages,
       coalesce(sum(m.ack_success), 0)::bigint AS ack_success, coalesce(sum(m.ack_failed), 0)::bigint AS ack_failed,
       coalesce(sum(m.dlq), 0)::bigint AS dlq,
       (SELECT coalesce(sum(w.db_errors), 0)::bigint FROM metrics_worker_minute w
        WHERE w.minute >= date_trunc('minute', @from::timestamptz) AND w.minute <= @to) AS db_errors
FROM metrics_queue_minute m
WHERE m.minute >= date_trunc('minute', @from::timestamptz) AND m.minute <= @to
  AND ((@queue::text IS NULL AND @namespace::text IS NULL AND @task::text IS NULL AND qg_scope_sees(m.tenant))
       OR (m.tenant, m.queue) IN (SELECT q.tenant, q.name FROM queues q
                      WHERE (@queue::text IS NULL OR q.name = @queue)
                        AND (@namespace::text IS NULL OR q.namespace = @namespace)
                        AND (@task::text IS NULL OR q.task = @task)))

-- Broker instances that flushed metrics between @from and @to.
-- name: status_workers
SELECT w.hostname AS hostname, w.worker_id AS worker_id, (array_agg(w.pid ORDER BY w.minute DESC))[1] AS pid,
       max(w.updated_at) AS last_seen
FROM metrics_worker_minute w
WHERE w.minute >= date_trunc('minute', @from::timestamptz) AND w.minute <= @to
GROUP BY w.hostname, w.worker_id
ORDER BY w.worker_id, w.hostname

-- One queue with its configuration and counters. @queue: its name.
-- name: status_queue
SELECT q.id::text AS id, q.name AS name, q.namespace AS namespace, q.task AS task, q.priority AS priority,
       q.created_at AS created_at, q.lease_time AS lease_time, q.retry_limit AS retry_limit,
       q.retry_delay AS retry_delay, q.ttl AS ttl, q.max_size AS max_size, q.dead_letter_queue AS dead_letter_queue,
       coalesce(s.total, 0) AS total, coalesce(s.pending + s.processing, 0) AS unconsumed,
       coalesce(s.processing, 0) AS processing, coalesce(s.dead_letter, 0) AS dead_letter
FROM queues q LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
WHERE q.name = @queue

-- name: queue_exists
SELECT EXISTS (SELECT 1 FROM queues q WHERE q.name = @queue) AS found

-- A queue's stored messages, newest first, with their state (the admin listing's function).
-- name: status_queue_messages
SELECT id AS id, transaction_id AS transaction_id, partition_id AS partition_id, queue_name AS queue,
       partition_name AS partition, status AS status, created_at AS created_at
FROM qg_list_messages(p_queue => @queue, p_partition => NULL, p_namespace => NULL, p_task => NULL, p_status => NULL,
                      p_from => '-infinity', p_to => 'infinity', p_limit => @limit, p_offset => @offset, p_now => @now)

-- Messages written per bucket (@unit: minute, hour or day) from @from to @to for the matching
-- queues, every bucket.
-- name: status_analytics
WITH buckets AS (
    SELECT generate_series(date_trunc(@unit, @from::timestamptz, 'UTC'), @to::timestamptz, ('1 ' || @unit)::interval) AS b
), written AS (
    SELECT date_trunc(@unit, m.minute, 'UTC') AS b, sum(m.push_messages) AS n
    FROM metrics_queue_minute m
    WHERE m.minute >= date_trunc(@unit, @from::timestamptz, 'UTC') AND m.minute <= @to
      AND ((@queue::text IS NULL AND @namespace::text IS NULL AND @task::text IS NULL AND qg_scope_sees(m.tenant))
           OR (m.tenant, m.queue) IN (SELECT q.tenant, q.name FROM queues q
                          WHERE (@queue::text IS NULL OR q.name = @queue)
                            AND (@namespace::text IS NULL OR q.namespace = @namespace)
                            AND (@task::text IS NULL OR q.task = @task)))
    GROUP BY 1
)
SELECT b.b AS bucket, coalesce(w.n, 0)::bigint AS n FROM buckets b LEFT JOIN written w ON w.b = b.b ORDER BY b.b

-- The database this broker writes to, as the spool records its owner (docs/api/operations.md
-- §4.2): the cluster's system identifier and the database's name.
-- name: database_identity
SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system, current_database() AS database
