-- Background jobs (docs/api/operations.md §5). Each job statement runs on the connection that holds the
-- job's advisory lock; the work itself lives in sql/functions/090_maintenance.sql and
-- 091_stats.sql.

-- Takes a job's lock without waiting; false when another session holds it.
-- name: job_try_lock
SELECT pg_try_advisory_lock(qg_job_lock_key(p_job => $1))

-- name: job_unlock
SELECT pg_advisory_unlock(qg_job_lock_key(p_job => $1))

-- Claims a run's start in the job's cluster-wide schedule (NULL gap: always).
-- name: job_claim
SELECT qg_job_claim(p_job => $1, p_gap => $2, p_worker => $3)

-- name: retention_batch
SELECT queue_name, partition_name, kind, removed, unconsumed, dead_lettered
FROM qg_retention_batch(p_run => $1::uuid, p_limit => $2, p_now => $3)

-- name: eviction_batch
SELECT queue_name, partition_name, kind, removed, unconsumed, dead_lettered
FROM qg_eviction_batch(p_run => $1::uuid, p_limit => $2, p_now => $3)

-- name: lease_housekeeping
SELECT expired_leases, retries_ended, queues_signalled FROM qg_lease_housekeeping(p_worker => $1, p_first_window => $2, p_now => $3)

-- name: cleanup_tombstones
SELECT qg_cleanup_tombstones(p_limit => $1, p_now => $2)

-- name: cleanup_partitions
SELECT qg_cleanup_partitions(p_days => $1, p_limit => $2, p_now => $3)

-- name: cleanup_history
SELECT removed, more
FROM qg_cleanup_history(p_stats_days => $1, p_metrics_days => $2, p_limit => $3, p_now => $4)

-- name: stats_partitions
SELECT qg_stats_partitions(p_run => $1::uuid, p_after => $2::uuid, p_limit => $3, p_now => $4)::text

-- name: stats_rollup
SELECT partitions, queues, namespaces, tasks, systems, cleanup FROM qg_stats_rollup(p_run => $1::uuid, p_now => $2)
