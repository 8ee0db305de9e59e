-- Background jobs (operations.md §5). Each job statement runs on the connection that holds the
-- job's advisory lock; the work itself lives in sql/functions/090_maintenance.sql and
-- 091_stats.sql.

-- Takes a job's lock without waiting; false when another session holds it.
-- name: job_try_lock
SELECT pg_try_advisory_lock(qg_job_lock_key($1))

-- name: job_unlock
SELECT pg_advisory_unlock(qg_job_lock_key($1))

-- name: retention_batch
SELECT queue_name, partition_name, kind, removed, unconsumed, dead_lettered
FROM qg_retention_batch($1::uuid, $2, $3)

-- name: eviction_batch
SELECT queue_name, partition_name, kind, removed, unconsumed, dead_lettered
FROM qg_eviction_batch($1::uuid, $2, $3)

-- name: lease_housekeeping
SELECT expired_leases, retries_ended, queues_signalled FROM qg_lease_housekeeping($1, $2, $3)

-- name: cleanup_tombstones
SELECT qg_cleanup_tombstones($1, $2)

-- name: cleanup_partitions
SELECT qg_cleanup_partitions($1, $2, $3)

-- name: cleanup_history
SELECT removed, more FROM qg_cleanup_history($1, $2, $3, $4)

-- name: stats_partitions
SELECT qg_stats_partitions($1::uuid, $2::uuid, $3, $4)::text

-- name: stats_rollup
SELECT partitions, queues, namespaces, tasks, systems, cleanup FROM qg_stats_rollup($1::uuid, $2)
