-- The cluster-wide Prometheus families (docs/api/admin-api.md §11.2) in one statement: running totals
-- summed over instances, per-queue and per-instance figures of the last full minute, and the
-- DLQ depth from the stats job. One row per sample: family, label pairs (name, value, …), value.
-- The per-queue families name a queue of another tenant than the default one by the labels tenant
-- and queue (docs/operations.md, "Tenants"); a tenant's session reads only its own queues.
-- @now: now (NULL = the database clock). Every column is named (AS): the Go side scans rows
-- by name.
-- name: metrics_cluster
WITH clock AS (
    SELECT t.now, date_trunc('minute', t.now) - interval '1 minute' AS minute
    FROM (SELECT coalesce(@now::timestamptz, clock_timestamp()) AS now) t
), totals AS (
    SELECT coalesce(sum(t.push_requests), 0) AS push_requests, coalesce(sum(t.pop_requests), 0) AS pop_requests,
           coalesce(sum(t.ack_requests), 0) AS ack_requests, coalesce(sum(t.transactions), 0) AS transactions,
           coalesce(sum(t.push_messages), 0) AS push_messages, coalesce(sum(t.pop_messages), 0) AS pop_messages,
           coalesce(sum(t.ack_messages), 0) AS ack_messages, coalesce(sum(t.ack_success), 0) AS ack_success,
           coalesce(sum(t.ack_failed), 0) AS ack_failed, coalesce(sum(t.db_errors), 0) AS db_errors,
           coalesce(sum(t.dlq), 0) AS dlq, coalesce(sum(t.leases_expired), 0) AS leases_expired
    FROM metrics_totals t
), per_queue AS (
    SELECT m.tenant, m.queue,
           CASE WHEN m.tenant = '' THEN ARRAY['queue', m.queue] ELSE ARRAY['tenant', m.tenant, 'queue', m.queue] END AS ql,
           sum(m.push_requests) AS push_requests, sum(m.push_messages) AS push_messages,
           sum(m.pop_messages) AS pop_messages, sum(m.pop_empty) AS pop_empty,
           sum(m.transactions) AS transactions, sum(m.ack_success) AS ack_success,
           sum(m.ack_failed) AS ack_failed, coalesce(sum(m.lag_ms_sum) / nullif(sum(m.lag_count), 0), 0) AS lag_avg,
           max(m.lag_ms_max) AS lag_max, sum(m.parked) AS parked,
           extract(epoch FROM c.now - (SELECT max(x.updated_at) FROM metrics_queue_minute x
                                       WHERE x.tenant = m.tenant AND x.queue = m.queue
                                         AND x.minute >= c.minute)) AS age
    FROM metrics_queue_minute m CROSS JOIN clock c
    WHERE m.minute = c.minute AND qg_scope_sees(m.tenant)
    GROUP BY m.tenant, m.queue, c.now, c.minute
), per_worker AS (
    SELECT w.hostname, w.worker_id, w.pid::text AS pid, w.push_requests, w.pop_requests, w.ack_requests,
           w.transactions, w.push_messages, w.pop_messages, w.ack_messages, w.ack_success, w.ack_failed,
           w.pool_size, w.db_errors, w.dlq,
           extract(epoch FROM c.now - (SELECT max(x.updated_at) FROM metrics_worker_minute x
                                       WHERE x.worker_id = w.worker_id AND x.minute >= c.minute)) AS age
    FROM metrics_worker_minute w CROSS JOIN clock c
    WHERE w.minute = c.minute
)
SELECT v.family AS family, v.labels AS labels, v.value::float8 AS value FROM totals t CROSS JOIN LATERAL (VALUES
    ('queen_cluster_push_requests_total', ARRAY['scope', 'cluster'], t.push_requests),
    ('queen_cluster_pop_requests_total', ARRAY['scope', 'cluster'], t.pop_requests),
    ('queen_cluster_ack_requests_total', ARRAY['scope', 'cluster'], t.ack_requests),
    ('queen_cluster_transactions_total', ARRAY['scope', 'cluster'], t.transactions),
    ('queen_cluster_push_messages_total', ARRAY['scope', 'cluster'], t.push_messages),
    ('queen_cluster_pop_messages_total', ARRAY['scope', 'cluster'], t.pop_messages),
    ('queen_cluster_ack_messages_total', ARRAY['scope', 'cluster'], t.ack_messages),
    ('queen_cluster_ack_total', ARRAY['scope', 'cluster', 'result', 'success'], t.ack_success),
    ('queen_cluster_ack_total', ARRAY['scope', 'cluster', 'result', 'failed'], t.ack_failed),
    ('queen_cluster_db_errors_total', ARRAY['scope', 'cluster'], t.db_errors),
    ('queen_cluster_dlq_total', ARRAY['scope', 'cluster'], t.dlq),
    ('queen_cluster_leases_expired_total', ARRAY['scope', 'cluster'], t.leases_expired)
) AS v (family, labels, value)
UNION ALL
SELECT v.family, v.labels, v.value::float8 FROM per_queue q CROSS JOIN LATERAL (VALUES
    ('queen_queue_push_requests_per_minute', q.ql, q.push_requests),
    ('queen_queue_push_messages_per_minute', q.ql, q.push_messages),
    ('queen_queue_pop_messages_per_minute', q.ql, q.pop_messages),
    ('queen_queue_pop_empty_per_minute', q.ql, q.pop_empty),
    ('queen_queue_transactions_per_minute', q.ql, q.transactions),
    ('queen_queue_ack_per_minute', q.ql || ARRAY['result', 'success'], q.ack_success),
    ('queen_queue_ack_per_minute', q.ql || ARRAY['result', 'failed'], q.ack_failed),
    ('queen_queue_pop_lag_milliseconds', q.ql || ARRAY['stat', 'avg'], q.lag_avg),
    ('queen_queue_pop_lag_milliseconds', q.ql || ARRAY['stat', 'max'], q.lag_max),
    ('queen_queue_parked_consumers', q.ql, q.parked),
    ('queen_queue_metrics_age_seconds', q.ql, q.age)
) AS v (family, labels, value)
UNION ALL
SELECT v.family, ARRAY['hostname', w.hostname, 'worker_id', w.worker_id, 'pid', w.pid] || v.labels, v.value::float8
FROM per_worker w CROSS JOIN LATERAL (VALUES
    ('queen_worker_requests_per_minute', ARRAY['op', 'push'], w.push_requests),
    ('queen_worker_requests_per_minute', ARRAY['op', 'pop'], w.pop_requests),
    ('queen_worker_requests_per_minute', ARRAY['op', 'ack'], w.ack_requests),
    ('queen_worker_requests_per_minute', ARRAY['op', 'transaction'], w.transactions),
    ('queen_worker_messages_per_minute', ARRAY['op', 'push'], w.push_messages),
    ('queen_worker_messages_per_minute', ARRAY['op', 'pop'], w.pop_messages),
    ('queen_worker_messages_per_minute', ARRAY['op', 'ack'], w.ack_messages),
    ('queen_worker_ack_per_minute', ARRAY['result', 'success'], w.ack_success),
    ('queen_worker_ack_per_minute', ARRAY['result', 'failed'], w.ack_failed),
    ('queen_worker_db_connections', '{}'::text[], w.pool_size),
    ('queen_worker_db_errors_per_minute', '{}'::text[], w.db_errors),
    ('queen_worker_dlq_per_minute', '{}'::text[], w.dlq),
    ('queen_worker_metrics_age_seconds', '{}'::text[], w.age)
) AS v (family, labels, value)
UNION ALL
SELECT 'queen_dlq_depth', ARRAY['scope', 'cluster'], s.dead_letter::float8 FROM stats s WHERE s.scope = 'system'
UNION ALL
SELECT 'queen_dlq_depth_by_queue',
       CASE WHEN q.tenant = '' THEN ARRAY['queue', q.name] ELSE ARRAY['tenant', q.tenant, 'queue', q.name] END,
       s.dead_letter::float8
FROM stats s JOIN queues q ON q.id = s.queue_id WHERE s.scope = 'queue'

-- Adds one instance's per-minute deltas (worker and queue rows: JSON arrays). Parameters are
-- named after the function parameter they fill.
-- name: metrics_flush
SELECT qg_metrics_flush(p_worker => @worker, p_hostname => @hostname, p_pid => @pid, p_workers => @workers::jsonb,
                        p_queues => @queues::jsonb, p_now => @now) AS flushed
