-- Dashboard time series (docs/api/admin-api.md §6) from the per-minute metrics, the stats history and
-- the retention history. $1 from, $2 to, $3 bucket size in minutes; only buckets with data
-- are returned. Filters are NULL for any.

-- Per instance and bucket. $4 hostname, $5 worker id. The latency histograms are summed over
-- the bucket's minutes (mq.LatencyBoundsMs; dashboard M13).
-- name: analytics_workers
SELECT date_bin($3::integer * interval '1 minute', w.minute, timestamptz '2000-01-01') AS b,
       w.hostname, w.worker_id, (array_agg(w.pid ORDER BY w.minute DESC))[1], count(*),
       sum(w.requests)::bigint, sum(w.push_requests)::bigint, sum(w.pop_requests)::bigint,
       sum(w.pop_empty)::bigint, sum(w.ack_requests)::bigint, sum(w.transactions)::bigint,
       sum(w.push_messages)::bigint, sum(w.pop_messages)::bigint, sum(w.ack_messages)::bigint,
       sum(w.ack_success)::bigint, sum(w.ack_failed)::bigint, sum(w.db_errors)::bigint, sum(w.dlq)::bigint,
       sum(w.push_ms_sum), max(w.push_ms_max), sum(w.pop_ms_sum), max(w.pop_ms_max),
       sum(w.ack_ms_sum), max(w.ack_ms_max), sum(w.txn_ms_sum), max(w.txn_ms_max),
       sum(w.cpu_user_us)::bigint, sum(w.cpu_sys_us)::bigint, max(w.rss_bytes), max(w.pool_size),
       max(w.pool_active), max(w.pool_idle), max(w.parked),
       qg_hist_sum(array_agg(w.push_ms_hist)), qg_hist_sum(array_agg(w.pop_ms_hist)),
       qg_hist_sum(array_agg(w.ack_ms_hist)), qg_hist_sum(array_agg(w.txn_ms_hist))
FROM metrics_worker_minute w
WHERE w.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
  AND w.minute <= $2 AND ($4::text IS NULL OR w.hostname = $4) AND ($5::text IS NULL OR w.worker_id = $5)
GROUP BY 1, 2, 3
ORDER BY 3, 2, 1

-- Per queue and bucket, summed over instances. $4 queue, $5 the queues to answer (NULL: all;
-- the busiest ones of analytics_top_traffic, docs/api/admin-api.md §6).
-- name: analytics_queues
SELECT date_bin($3::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS b, m.queue,
       sum(m.push_requests)::bigint, sum(m.push_messages)::bigint, sum(m.pop_requests)::bigint,
       sum(m.pop_messages)::bigint, sum(m.pop_empty)::bigint, sum(m.ack_requests)::bigint,
       sum(m.ack_messages)::bigint, sum(m.ack_success)::bigint, sum(m.ack_failed)::bigint,
       sum(m.transactions)::bigint, sum(m.dlq)::bigint,
       coalesce(sum(m.lag_ms_sum) / nullif(sum(m.lag_count), 0), 0)::float8, max(m.lag_ms_max)
FROM metrics_queue_minute m
WHERE m.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= $2 AND ($4::text IS NULL OR m.queue = $4) AND ($5::text[] IS NULL OR m.queue = ANY($5))
GROUP BY 1, 2
ORDER BY 2, 1

-- The queues left out of analytics_queues summed per bucket: queue-ops' "other" series. $4 the
-- queues answered on their own.
-- name: analytics_queues_other
SELECT date_bin($3::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS b,
       sum(m.push_requests)::bigint, sum(m.push_messages)::bigint, sum(m.pop_requests)::bigint,
       sum(m.pop_messages)::bigint, sum(m.pop_empty)::bigint, sum(m.ack_requests)::bigint,
       sum(m.ack_messages)::bigint, sum(m.ack_success)::bigint, sum(m.ack_failed)::bigint,
       sum(m.transactions)::bigint, sum(m.dlq)::bigint,
       coalesce(sum(m.lag_ms_sum) / nullif(sum(m.lag_count), 0), 0)::float8, max(m.lag_ms_max)
FROM metrics_queue_minute m
WHERE m.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= $2 AND m.queue <> ALL($4::text[])
GROUP BY 1
ORDER BY 1

-- The busiest queues of the window, by messages pushed plus popped: at most $4 names, busiest
-- first, and how many queues had traffic at all (the rest are "omittedQueues"). $5 true: only
-- queues with parked pops in the window count (queue-parked-replicas).
-- name: analytics_top_traffic
WITH t AS (
    SELECT m.queue, sum(m.push_messages + m.pop_messages) AS n
    FROM metrics_queue_minute m
    WHERE m.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
      AND m.minute <= $2
    GROUP BY m.queue
    HAVING NOT $5::boolean OR max(m.parked) > 0
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT $4), '{}'::text[]),
       (SELECT count(*) FROM t)

-- The queues with the largest lag of the window (pop lag from the metrics, consumer time lag
-- from the stats history, in seconds), at most $4, and how many queues had either.
-- name: analytics_top_lag
WITH l AS (
    SELECT m.queue, max(m.lag_ms_max) / 1000.0 AS lag
    FROM metrics_queue_minute m
    WHERE m.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
      AND m.minute <= $2
    GROUP BY m.queue
    UNION ALL
    SELECT h.queue_name, max(h.time_lag_max)::float8
    FROM stats_history h
    WHERE h.scope = 'queue'
      AND h.bucket >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
      AND h.bucket <= $2
    GROUP BY h.queue_name
), t AS (
    SELECT l.queue, max(coalesce(l.lag, 0)) AS n FROM l GROUP BY l.queue
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT $4), '{}'::text[]),
       (SELECT count(*) FROM t)

-- Parked long-poll pops per queue, instance and bucket (the largest sample). $4 queue, $5 the
-- queues to answer (NULL: all).
-- name: analytics_parked
SELECT date_bin($3::integer * interval '1 minute', m.minute, timestamptz '2000-01-01') AS b, m.queue,
       m.worker_id, max(m.parked)
FROM metrics_queue_minute m
WHERE m.minute >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
  AND m.minute <= $2 AND ($4::text IS NULL OR m.queue = $4) AND ($5::text[] IS NULL OR m.queue = ANY($5))
  AND m.parked > 0
GROUP BY 1, 2, 3
ORDER BY 2, 3, 1

-- Consumer lag and depth per queue and bucket, from the stats history. $4 queue, $5 the queues
-- to answer (NULL: all).
-- name: analytics_queue_depth
SELECT date_bin($3::integer * interval '1 minute', h.bucket, timestamptz '2000-01-01') AS b, h.queue_name,
       max(h.time_lag_max), avg(h.pending)::float8, avg(h.processing)::float8
FROM stats_history h
WHERE h.scope = 'queue'
  AND h.bucket >= date_bin($3::integer * interval '1 minute', $1::timestamptz, timestamptz '2000-01-01')
  AND h.bucket <= $2 AND ($4::text IS NULL OR h.queue_name = $4)
  AND ($5::text[] IS NULL OR h.queue_name = ANY($5))
GROUP BY 1, 2
ORDER BY 2, 1

-- Retention and eviction runs between $1 and $2, newest first. $3 queue, $4 limit, $5 the queues
-- to answer (NULL: all).
-- name: analytics_retention
SELECT h.run_id::text, h.run_at, h.queue_name, h.partition_name, h.kind, h.removed, h.unconsumed,
       h.dead_lettered
FROM retention_history h
WHERE h.run_at >= $1 AND h.run_at <= $2 AND ($3::text IS NULL OR h.queue_name = $3)
  AND ($5::text[] IS NULL OR h.queue_name = ANY($5))
ORDER BY h.run_at DESC, h.queue_name, h.partition_name, h.kind
LIMIT $4

-- The queues that lost the most messages to retention and eviction between $1 and $2, at most
-- $3, and how many queues lost any.
-- name: analytics_top_removed
WITH t AS (
    SELECT h.queue_name AS queue, sum(h.removed) AS n
    FROM retention_history h
    WHERE h.run_at >= $1 AND h.run_at <= $2
    GROUP BY h.queue_name
)
SELECT coalesce(array(SELECT t.queue FROM t ORDER BY t.n DESC, t.queue LIMIT $3), '{}'::text[]),
       (SELECT count(*) FROM t)

-- The same, summed per kind over the whole window.
-- name: analytics_retention_totals
SELECT h.kind, sum(h.removed)::bigint, sum(h.unconsumed)::bigint, sum(h.dead_lettered)::bigint
FROM retention_history h
WHERE h.run_at >= $1 AND h.run_at <= $2 AND ($3::text IS NULL OR h.queue_name = $3)
GROUP BY h.kind
ORDER BY h.kind

-- Size and activity of this database.
-- name: postgres_database
SELECT current_database(), pg_database_size(current_database()), d.xact_commit, d.xact_rollback,
       d.blks_hit, d.blks_read, d.deadlocks, d.temp_bytes, a.total, a.active, a.idle, a.idle_tx, a.waiting
FROM pg_stat_database d
CROSS JOIN (SELECT count(*) AS total, count(*) FILTER (WHERE s.state = 'active') AS active,
                   count(*) FILTER (WHERE s.state = 'idle') AS idle,
                   count(*) FILTER (WHERE s.state LIKE 'idle in transaction%') AS idle_tx,
                   count(*) FILTER (WHERE s.wait_event_type = 'Lock') AS waiting
            FROM pg_stat_activity s WHERE s.datname = current_database()) a
WHERE d.datname = current_database()

-- Size and activity of the tables of our schema, largest first.
-- name: postgres_tables
SELECT t.relname::text, t.n_live_tup, pg_total_relation_size(t.relid), pg_relation_size(t.relid),
       pg_indexes_size(t.relid), coalesce(t.seq_scan, 0), coalesce(t.idx_scan, 0), t.n_dead_tup,
       greatest(t.last_autovacuum, t.last_vacuum)
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
SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''), coalesce(a.backend_type, ''),
       a.xact_start, coalesce(greatest(extract(epoch FROM clock_timestamp() - a.xact_start), 0), 0)::float8,
       age(a.backend_xmin)::bigint
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
SELECT s.slot_name::text, s.slot_type, s.active, age(s.xmin)::bigint, age(s.catalog_xmin)::bigint
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
