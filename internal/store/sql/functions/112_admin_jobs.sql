-- Background-job runs across instances (docs/api/admin-api.md §10.3; dashboard M12).

-- Records one run of p_job and prunes that job's records older than a day before p_now;
-- returns how many were pruned.
CREATE OR REPLACE FUNCTION qg_record_job_run(p_job text, p_started timestamptz, p_worker text, p_hostname text,
    p_duration_ms bigint, p_error text, p_now timestamptz)
RETURNS bigint LANGUAGE sql AS $$
    WITH pruned AS (
        DELETE FROM job_run_log l
        WHERE l.job = p_job AND l.started_at < coalesce(p_now, now()) - interval '1 day'
        RETURNING 1
    ), added AS (
        INSERT INTO job_run_log (job, started_at, worker_id, hostname, duration_ms, failed, error)
        VALUES (p_job, p_started, p_worker, p_hostname, p_duration_ms, p_error IS NOT NULL, p_error)
    )
    SELECT count(*) FROM pruned;
$$;

-- Per job of p_jobs (in that order): whether an instance holds its advisory lock (or, behind a
-- pooler, its lease row) now, its latest run, its latest success and failure, and its runs and
-- failures in the day before p_now.
CREATE OR REPLACE FUNCTION qg_job_summaries(p_jobs text[], p_now timestamptz)
RETURNS TABLE (job text, running boolean, leader text, last_run_at timestamptz, last_duration_ms bigint,
               last_failed boolean, last_error text, last_success_at timestamptz, last_failure_at timestamptz,
               runs bigint, failures bigint)
LANGUAGE sql STABLE AS $$
    SELECT j.job,
           EXISTS (SELECT 1 FROM pg_locks k
                   WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1
                     AND k.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                     AND ((k.classid::bigint << 32) | k.objid::bigint) = qg_job_lock_key(j.job))
           OR EXISTS (SELECT 1 FROM job_leases k WHERE k.job = j.job AND k.expires_at > clock_timestamp()),
           latest.worker_id, latest.started_at, latest.duration_ms, latest.failed, latest.error,
           (SELECT max(l.started_at) FROM job_run_log l WHERE l.job = j.job AND NOT l.failed),
           (SELECT max(l.started_at) FROM job_run_log l WHERE l.job = j.job AND l.failed),
           (SELECT count(*) FROM job_run_log l
            WHERE l.job = j.job AND l.started_at >= coalesce(p_now, now()) - interval '1 day'),
           (SELECT count(*) FROM job_run_log l
            WHERE l.job = j.job AND l.failed AND l.started_at >= coalesce(p_now, now()) - interval '1 day')
    FROM unnest(p_jobs) WITH ORDINALITY AS j(job, n)
    LEFT JOIN LATERAL (SELECT l.* FROM job_run_log l WHERE l.job = j.job ORDER BY l.started_at DESC LIMIT 1) latest ON true
    ORDER BY j.n;
$$;

-- The instances that ran each job in the day before p_now, most recent first, with their
-- own counts.
CREATE OR REPLACE FUNCTION qg_job_instances(p_now timestamptz)
RETURNS TABLE (job text, worker_id text, hostname text, last_run_at timestamptz, runs bigint, failures bigint)
LANGUAGE sql STABLE AS $$
    SELECT l.job, l.worker_id, (array_agg(l.hostname ORDER BY l.started_at DESC))[1], max(l.started_at),
           count(*), count(*) FILTER (WHERE l.failed)
    FROM job_run_log l
    WHERE l.started_at >= coalesce(p_now, now()) - interval '1 day'
    GROUP BY l.job, l.worker_id
    ORDER BY l.job, max(l.started_at) DESC, l.worker_id;
$$;
