-- Background jobs (docs/api/operations.md §5). Each job statement runs on the connection that holds the
-- job's advisory lock; the work itself lives in sql/functions/090_maintenance.sql and
-- 091_stats.sql. Parameters are named after the function parameter they fill (p_job => @job),
-- and every column is named (AS): the Go side binds by name and scans rows by those names.

-- Takes a job's lock without waiting; false when another session holds it.
-- name: job_try_lock
SELECT pg_try_advisory_lock(qg_job_lock_key(p_job => @job)) AS locked

-- name: job_unlock
SELECT pg_advisory_unlock(qg_job_lock_key(p_job => @job)) AS freed

-- Behind a transaction pooler without a direct session, a job leads by a lease row instead
-- (migration 0018): take it without waiting, renew it before each statement, give it back.
-- name: job_lease_take
SELECT qg_job_lease_take(p_job => @job, p_holder => @holder, p_ttl => @ttl) AS locked

-- name: job_lease_renew
SELECT qg_job_lease_renew(p_job => @job, p_holder => @holder, p_ttl => @ttl) AS locked

-- name: job_lease_release
SELECT qg_job_lease_release(p_job => @job, p_holder => @holder) AS freed

-- Claims a run's start in the job's cluster-wide schedule (NULL gap: always).
-- name: job_claim
SELECT qg_job_claim(p_job => @job, p_gap => @gap, p_worker => @worker, p_stretch => @stretch) AS claimed

-- name: retention_batch
SELECT coalesce(queue_name, '') AS queue, coalesce(partition_name, '') AS partition, kind AS kind, removed AS removed,
       unconsumed AS unconsumed, dead_lettered AS dead_lettered, coalesce(queue_tenant, '') AS tenant, walked_to AS walked_to
FROM qg_retention_batch(p_run => @run::uuid, p_limit => @limit, p_now => @now, p_after => @after::uuid)

-- name: eviction_batch
SELECT coalesce(queue_name, '') AS queue, coalesce(partition_name, '') AS partition, kind AS kind, removed AS removed,
       unconsumed AS unconsumed, dead_lettered AS dead_lettered, coalesce(queue_tenant, '') AS tenant, walked_to AS walked_to
FROM qg_eviction_batch(p_run => @run::uuid, p_limit => @limit, p_now => @now, p_after => @after::uuid)

-- name: segment_rotate
SELECT qg_segment_rotate(p_width => @width, p_active => @active, p_now => @now) AS seg

-- name: segments_due
SELECT s AS seg FROM qg_segments_due(p_hold => @hold, p_now => @now) s

-- name: segment_drop
SELECT coalesce(queue_name, '') AS queue, coalesce(partition_name, '') AS partition, kind AS kind, removed AS removed,
       unconsumed AS unconsumed, dead_lettered AS dead_lettered, coalesce(queue_tenant, '') AS tenant, NULL::uuid AS walked_to
FROM qg_segment_drop(p_run => @run::uuid, p_seg => @seg, p_now => @now)

-- name: tombstone_segments_due
SELECT s AS seg FROM qg_tombstone_segments_due(p_now => @now) s

-- name: tombstone_segment_drop
SELECT qg_tombstone_segment_drop(p_tseg => @tseg, p_now => @now) AS dropped

-- The shortest retention of any queue of any tenant with retention enabled, in seconds (0: none).
-- name: shortest_retention
SELECT coalesce(min(least(nullif(q.retention_seconds, 0), nullif(q.completed_retention_seconds, 0))), 0)::bigint AS seconds
FROM queue_rows q WHERE q.retention_enabled

-- name: lease_housekeeping
SELECT expired_leases AS expired_leases, retries_ended AS retries_ended, queues_signalled AS queues_signalled
FROM qg_lease_housekeeping(p_worker => @worker, p_first_window => @first_window, p_now => @now)

-- name: cleanup_tombstones
SELECT qg_cleanup_tombstones(p_limit => @limit, p_now => @now) AS removed

-- name: cleanup_partitions
SELECT qg_cleanup_partitions(p_days => @days, p_limit => @limit, p_now => @now) AS removed

-- name: cleanup_history
SELECT removed AS removed, more AS more
FROM qg_cleanup_history(p_stats_days => @stats_days, p_metrics_days => @metrics_days, p_limit => @limit, p_now => @now)

-- name: stats_partitions
SELECT qg_stats_partitions(p_run => @run::uuid, p_after => @after::uuid, p_limit => @limit, p_now => @now)::text AS last

-- name: stats_rollup
SELECT partitions AS partitions, queues AS queues, namespaces AS namespaces, tasks AS tasks, systems AS systems,
       cleanup AS cleanup
FROM qg_stats_rollup(p_run => @run::uuid, p_now => @now)
