-- Dashboard time series (docs/api/admin-api.md §6) from the per-minute metrics, the stats history and
-- the retention history. @from, @to: the window; @bucket_minutes: the bucket size in minutes;
-- only buckets with data are returned. Filters are NULL for any. Every column is named (AS), and
-- the Go side scans rows by those names (pgx.RowToStructByName).

-- Per instance and bucket. @hostname, @worker_id: filters. The latency histograms are summed
-- over the bucket's minutes (mq.LatencyBoundsMs; dashboard M13).
-- name: analytics_workers
SELECT date_bin(@bucket_minutes::integer * interval '1 minute', w.minute, timestamptz '2000-01-01') AS bucket,
       w.hostname AS hostname, w.worker_id AS worker_id, (array_agg(w.pid ORDER BY w.minute DESC))[1] AS pid,
       count(*) AS minutes, sum(w.requests)::bigint AS requests, sum(w.push_requests)::bigint AS push_requests,
       sum(w.pop_requests)::bigint AS pop_requests, sum(w.pop_empty)::bigint AS pop_empty,
       sum(w.ack_requests)::bigint AS ack_requests, sum(w.transactions)::bigint AS transactions,
       sum(w.push_messages)::bigint AS push_messages, sum(w.pop_messages)::bigint AS pop_messages,
       sum(w.ack_messages)::bigint AS ack_messages, sum(w.ack_success)::bigint AS ack_success,
       sum(w.ack_failed)::bigint AS ack_failed, sum(w.db_errors)::bigint AS db_errors, sum(w.dlq)::bigint AS dlq,
       sum(w.push_ms_sum) AS push_ms_sum, max(w.push_ms_max) AS push_ms_max, sum(w.pop_ms_sum) AS pop_ms_sum,
       max(w.pop_ms_max) AS pop_ms_max, sum(w.ack_ms_sum) AS ack_ms_sum, max(w.ack_ms_max) AS ack_ms_max,
       sum(w.txn_ms_sum) AS txn_ms_sum, max(w.txn_ms_max) AS txn_ms_max,
       sum(w.cpu_user_us)::bigint AS cpu_user_us, sum(w.cpu_sys_us)::bigint AS cpu_sys_us,
       max(w.rss_bytes) AS rss_bytes, max(w.pool_size) AS pool_size, max(w.pool_active) AS pool_active,
       max(w.pool_idle) AS pool_idle, max(w.parked) AS parked,
       qg_hist_sum(array_agg(w.push_ms_hist)) AS push_hist, qg_hist_sum(array_agg(w.pop_ms_hist)) AS pop_hist,
       qg_hist_sum(array_agg(w.ack_ms_hist)) AS ack_hist, qg_hist_sum(array_agg(w.txn_ms_hist)) AS txn_hist
FROM metrics_worker_minute w
WHERE w.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
  AND w.minute <= @to AND (@hostname::text IS NULL OR w.hostname = @hostname)
  AND (@worker_id::text IS NULL OR w.worker_id = @worker_id)
GROUP BY 1, 2, 3
ORDER BY 3, 2, 1

-- Per queue and bucket, summed over instances. @queue: filter; @only: the queues to answer
-- (NULL: all; the busiest ones of analytics_top_traffic, docs/api/admin-api.md §6).
-- name: analytics_queues
SELECT date_bin(@bucket_minutes::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS bucket,
       m.queue AS queue, sum(m.push_requests)::bigint AS push_requests,
       sum(m.push_messages)::bigint AS push_messages, sum(m.pop_requests)::bigint AS pop_requests,
       sum(m.pop_messages)::bigint AS pop_messages, sum(m.pop_empty)::bigint AS pop_empty,
       sum(m.ack_requests)::bigint AS ack_requests, sum(m.ack_messages)::bigint AS ack_messages,
       sum(m.ack_success)::bigint AS ack_success, sum(m.ack_failed)::bigint AS ack_failed,
       sum(m.transactions)::bigint AS transactions, sum(m.dlq)::bigint AS dlq,
       coalesce(sum(m.lag_ms_sum) / nullif(sum(m.lag_count), 0), 0)::float8 AS avg_lag_ms,
       max(m.lag_ms_max) AS max_lag_ms
FROM metrics_queue_minute m
WHERE qg_scope_sees(m.tenant) AND m.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= @to AND (@queue::text IS NULL OR m.queue = @queue)
  AND (@only::text[] IS NULL OR m.queue = ANY(@only))
GROUP BY 1, 2
ORDER BY 2, 1

-- The queues left out of analytics_queues summed per bucket: queue-ops' "other" series.
-- @answered: the queues answered on their own.
-- name: analytics_queues_other
SELECT date_bin(@bucket_minutes::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS bucket,
       ''::text AS queue, -- a row of the per-queue series, for no one queue
       sum(m.push_requests)::bigint AS push_requests, sum(m.push_messages)::bigint AS push_messages,
       sum(m.pop_requests)::bigint AS pop_requests, sum(m.pop_messages)::bigint AS pop_messages,
       sum(m.pop_empty)::bigint AS pop_empty, sum(m.ack_requests)::bigint AS ack_requests,
       sum(m.ack_messages)::bigint AS ack_messages, sum(m.ack_success)::bigint AS ack_success,
       sum(m.ack_failed)::bigint AS ack_failed, sum(m.transactions)::bigint AS transactions,
       sum(m.dlq)::bigint AS dlq,
       coalesce(sum(m.lag_ms_sum) / nullif(sum(m.lag_count), 0), 0)::float8 AS avg_lag_ms,
       max(m.lag_ms_max) AS max_lag_ms
FROM metrics_queue_minute m
WHERE qg_scope_sees(m.tenant) AND m.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= @to AND m.queue <> ALL(@answered::text[])
GROUP BY 1
ORDER BY 1

-- The busiest queues of the window, by messages pushed plus popped: at most @limit names,
-- busiest first, and how many queues had traffic at all (the rest are "omittedQueues").
-- @parked_only true: only queues with parked pops in the window count (queue-parked-replicas).
-- name: analytics_top_traffic
WITH t AS (
    SELECT m.queue, sum(m.push_messages + m.pop_messages) AS n
    FROM metrics_queue_minute m
    WHERE qg_scope_sees(m.tenant) AND m.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
      AND m.minute <= @to
    GROUP BY m.queue
    HAVING NOT @parked_only::boolean OR max(m.parked) > 0
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT @limit), '{}'::text[]) AS names,
       (SELECT count(*) FROM t) AS total

-- The queues with the largest lag of the window (pop lag from the metrics, consumer time lag
-- from the stats history, in seconds), at most @limit, and how many queues had either.
-- name: analytics_top_lag
WITH l AS (
    SELECT m.queue, max(m.lag_ms_max) / 1000.0 AS lag
    FROM metrics_queue_minute m
    WHERE qg_scope_sees(m.tenant) AND m.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
      AND m.minute <= @to
    GROUP BY m.queue
    UNION ALL
    SELECT h.queue_name, max(h.time_lag_max)::float8
    FROM stats_history h
    WHERE qg_scope_sees(h.tenant) AND h.scope = 'queue'
      AND h.bucket >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
      AND h.bucket <= @to
    GROUP BY h.queue_name
), t AS (
    SELECT l.queue, max(coalesce(l.lag, 0)) AS n FROM l GROUP BY l.queue
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT @limit), '{}'::text[]) AS names,
       (SELECT count(*) FROM t) AS total

-- Parked long-poll pops per queue, instance and bucket (the largest sample). @queue: filter;
-- @only: the queues to answer (NULL: all).
-- name: analytics_parked
SELECT date_bin(@bucket_minutes::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS bucket,
       m.queue AS queue, m.worker_id AS worker_id, max(m.parked) AS parked
FROM metrics_queue_minute m
WHERE qg_scope_sees(m.tenant) AND m.minute >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= @to AND (@queue::text IS NULL OR m.queue = @queue)
  AND (@only::text[] IS NULL OR m.queue = ANY(@only))
  AND m.parked > 0
GROUP BY 1, 2, 3
ORDER BY 2, 3, 1

-- Consumer lag and depth per queue and bucket, from the stats history. @queue: filter; @only:
-- the queues to answer (NULL: all).
-- name: analytics_queue_depth
SELECT date_bin(@bucket_minutes::integer * interval '1 minute', h.bucket, timestamptz '2000-01-01') AS bucket,
       h.queue_name AS queue, max(h.time_lag_max) AS max_time_lag_seconds,
       avg(h.pending)::float8 AS avg_pending, avg(h.processing)::float8 AS avg_in_flight
FROM stats_history h
WHERE qg_scope_sees(h.tenant) AND h.scope = 'queue'
  AND h.bucket >= date_bin(@bucket_minutes::integer * interval '1 minute', @from::timestamptz, timestamptz '2000-01-01')
  AND h.bucket <= @to AND (@queue::text IS NULL OR h.queue_name = @queue)
  AND (@only::text[] IS NULL OR h.queue_name = ANY(@only))
GROUP BY 1, 2
ORDER BY 2, 1

-- Retention and eviction runs between @from and @to, newest first. @queue: filter; @limit: at
-- most that many runs; @only: the queues to answer (NULL: all).
-- name: analytics_retention
SELECT h.run_id::text AS run_id, h.run_at AS run_at, h.queue_name AS queue, h.partition_name AS partition,
       h.kind AS kind, h.removed AS removed, h.unconsumed AS unconsumed, h.dead_lettered AS dead_lettered
FROM retention_history h
WHERE qg_scope_sees(h.tenant) AND h.run_at >= @from AND h.run_at <= @to AND (@queue::text IS NULL OR h.queue_name = @queue)
  AND (@only::text[] IS NULL OR h.queue_name = ANY(@only))
ORDER BY h.run_at DESC, h.queue_name, h.partition_name, h.kind
LIMIT @limit

-- The queues that lost the most messages to retention and eviction between @from and @to, at
-- most @limit, and how many queues lost any.
-- name: analytics_top_removed
WITH t AS (
    SELECT h.queue_name AS queue, sum(h.removed) AS n
    FROM retention_history h
    WHERE qg_scope_sees(h.tenant) AND h.run_at >= @from AND h.run_at <= @to
    GROUP BY h.queue_name
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT @limit), '{}'::text[]) AS names,
       (SELECT count(*) FROM t) AS total

-- The same, summed per kind over the whole window (@queue: filter).
-- name: analytics_retention_totals
SELECT h.kind AS kind, sum(h.removed)::bigint AS removed, sum(h.unconsumed)::bigint AS unconsumed,
       sum(h.dead_lettered)::bigint AS dead_lettered
FROM retention_history h
WHERE qg_scope_sees(h.tenant) AND h.run_at >= @from AND h.run_at <= @to AND (@queue::text IS NULL OR h.queue_name = @queue)
GROUP BY h.kind
ORDER BY h.kind

-- Size and activity of this database.
-- name: postgres_database
SELECT current_database() AS database, pg_database_size(current_database()) AS size_bytes,
       d.xact_commit AS commits, d.xact_rollback AS rollbacks, d.blks_hit AS blocks_hit, d.blks_read AS blocks_read,
       d.deadlocks AS deadlocks, d.temp_bytes AS temp_bytes, a.total AS connections, a.active AS active,
       a.idle AS idle, a.idle_tx AS idle_in_transaction, a.waiting AS waiting_on_locks
FROM pg_stat_database d
CROSS JOIN (SELECT count(*) AS total, count(*) FILTER (WHERE s.state = 'active') AS active,
                   count(*) FILTER (WHERE s.state = 'idle') AS idle,
                   count(*) FILTER (WHERE s.state LIKE 'idle in transaction%') AS idle_tx,
                   count(*) FILTER (WHERE s.wait_event_type = 'Lock') AS waiting
            FROM pg_stat_activity s WHERE s.datname = current_database()) a
WHERE d.datname = current_database()

-- Size and activity of the tables of our schema, largest first.
-- name: postgres_tables
SELECT t.relname::text AS name, t.n_live_tup AS rows, pg_total_relation_size(t.relid) AS total_bytes,
       pg_relation_size(t.relid) AS table_bytes, pg_indexes_size(t.relid) AS index_bytes,
       coalesce(t.seq_scan, 0) AS seq_scans, coalesce(t.idx_scan, 0) AS index_scans, t.n_dead_tup AS dead_rows,
       greatest(t.last_autovacuum, t.last_vacuum) AS last_vacuum
FROM pg_stat_user_tables t
WHERE t.schemaname = current_schema()
ORDER BY pg_total_relation_size(t.relid) DESC, t.relname

-- The session holding the oldest snapshot among those on this database: while it runs, vacuum
-- and pruning keep every row version newer than its backend_xmin (docs/operations.md, "A held
-- snapshot horizon"). Sessions of other databases do not hold our tables' horizon; walsenders
-- are in xmin_replication. The oldest is the one with the oldest xmin, not the oldest
-- transaction: a READ COMMITTED transaction open for an hour holds only its current
-- statement's snapshot. Its age is taken from xact_start (a snapshot is never older than its
-- transaction; backend_start would count the connection's idle life). Left out: this reading
-- session, and autovacuum workers (no user), whose lazy VACUUM other vacuums ignore
-- (PROC_IN_VACUUM) and which would raise false alarms on large tables. Of another role's
-- sessions, a user without pg_read_all_stats sees pid, usesysid, application_name and
-- backend_xmin but NULL state, backend_type and xact_start: such a holder is still reported,
-- with xact_start NULL (mq.XminHolder.Hidden), so no filter here may test those columns for
-- a value.
-- name: xmin_oldest_transaction
SELECT a.pid AS pid, coalesce(a.application_name, '') AS application_name, coalesce(a.state, '') AS state,
       coalesce(a.backend_type, '') AS backend_type, a.xact_start AS xact_start,
       coalesce(greatest(extract(epoch FROM clock_timestamp() - a.xact_start), 0), 0)::float8 AS age_seconds,
       age(a.backend_xmin)::bigint AS xid_age
FROM pg_stat_activity a
WHERE a.backend_xmin IS NOT NULL AND a.pid <> pg_backend_pid() AND a.datname = current_database()
  AND a.usesysid IS NOT NULL AND a.backend_type IS DISTINCT FROM 'autovacuum worker'
  AND a.backend_type IS DISTINCT FROM 'walsender'
ORDER BY age(a.backend_xmin) DESC, a.xact_start, a.pid
LIMIT 1

-- Replication slots of this database or of none (physical) holding xmin or catalog_xmin, and
-- walsenders holding a horizon (a standby's hot_standby_feedback without a slot, a logical
-- walsender's snapshot), oldest first. Ages are in transaction ids: PostgreSQL records no time
-- for these horizons. (ORDER BY of a UNION takes output column positions.)
-- name: xmin_replication
SELECT s.slot_name::text AS name, s.slot_type AS type, s.active AS active, age(s.xmin)::bigint AS xmin_age,
       age(s.catalog_xmin)::bigint AS catalog_xmin_age
FROM pg_replication_slots s
WHERE (s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL)
  AND (s.database IS NULL OR s.database = current_database())
UNION ALL
SELECT coalesce(nullif(a.application_name, ''), 'walsender ' || a.pid), 'walsender', true,
       age(a.backend_xmin)::bigint, NULL::bigint
FROM pg_stat_activity a
WHERE a.backend_type = 'walsender' AND a.backend_xmin IS NOT NULL
  AND (a.datname IS NULL OR a.datname = current_database())
ORDER BY 4 DESC NULLS LAST, 5 DESC NULLS LAST, 1
