-- queen-go schema, version 15: a background job's interval holds across the cluster
-- (docs/api/operations.md §5). Every instance ticks every job, and the advisory lock only kept
-- two runs from overlapping, so N instances ran each job N times per interval: at 20,000
-- partitions the stats job (seconds of database time) then ran nearly back to back with three
-- brokers. A scheduled run first claims its job's row here; the claim succeeds only when no run
-- started within the interval, on any instance (docs/decisions.md).
CREATE TABLE job_schedule (
    job        text PRIMARY KEY,
    started_at timestamptz NOT NULL,   -- the database's clock when the last run started
    worker_id  text NOT NULL
);
