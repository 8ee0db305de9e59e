-- queen-go schema, version 8: what the dashboard needs of the schema (docs/api/dashboard.md §3).
--
-- GET /api/v1/messages?traceId= (docs/api/admin-api.md §2.1, M10) SHOULD be an index lookup,
-- not a scan of the window. Partial: only messages pushed with a traceId pay for it. A lookup
-- by transactionId needs no index of its own: it probes the (partition_id, transaction_id) key
-- of each matching partition.
CREATE INDEX messages_trace_id ON messages (trace_id) WHERE trace_id IS NOT NULL;

-- One row per background-job run on any instance (docs/api/admin-api.md §10.3, M12), for
-- GET /api/v1/system/jobs: the latest run, the last success and failure, counts over 24 h per
-- instance. Rows older than a day are pruned as runs are recorded. error is the driver's text:
-- the route reading it is admin-only (operations.md §9.6).
CREATE TABLE job_run_log (
    job         text NOT NULL,
    started_at  timestamptz NOT NULL,
    worker_id   text NOT NULL,
    hostname    text NOT NULL,
    duration_ms bigint NOT NULL,
    failed      boolean NOT NULL,
    error       text
);
CREATE INDEX job_run_log_job ON job_run_log (job, started_at DESC);
