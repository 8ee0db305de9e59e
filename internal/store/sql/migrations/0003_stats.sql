-- queen-go schema, version 3: background jobs (docs/api/operations.md §5), the statistics behind the
-- status routes (docs/api/admin-api.md §5, §8) and the metrics flushed by every instance (§6, §11).

-- Where each leader job left off, shared by every instance: a new leader continues the lease
-- housekeeping window of the previous one instead of missing or repeating it.
CREATE TABLE job_runs (
    job         text PRIMARY KEY,
    last_now    timestamptz NOT NULL,     -- the "now" the last completed run worked with
    worker_id   text NOT NULL,
    finished_at timestamptz NOT NULL
);

-- What retention and eviction removed, per run and partition (docs/api/concepts.md §11). Queue and
-- partition names are copied so the record outlives them.
CREATE TABLE retention_history (
    run_id         uuid NOT NULL,
    partition_id   uuid NOT NULL,
    kind           text NOT NULL,          -- retention | completed_retention | max_wait_time_eviction
    queue_id       uuid NOT NULL,
    queue_name     text NOT NULL,
    partition_name text NOT NULL,
    removed        bigint NOT NULL DEFAULT 0,
    unconsumed     bigint NOT NULL DEFAULT 0,   -- retention: removed messages that were unconsumed
    dead_lettered  bigint NOT NULL DEFAULT 0,   -- eviction: DLQ entries written
    run_at         timestamptz NOT NULL,
    PRIMARY KEY (run_id, partition_id, kind)
);
CREATE INDEX retention_history_run_at ON retention_history (run_at);
CREATE INDEX retention_history_queue ON retention_history (queue_name, run_at);

-- Counters computed by the stats job, one row per scope and key: partition (key = partition
-- id), queue (queue id), namespace, task (their names) and system (''). Reads join the live
-- queues and partitions tables, so what exists is always current and only the numbers may be
-- up to STATS_INTERVAL_MS old. run_id marks the run that wrote a row; rows a run did not
-- write belong to objects that are gone and are removed at its end.
CREATE TABLE stats (
    scope              text NOT NULL,
    key                text NOT NULL,
    queue_id           uuid,                 -- partition and queue rows
    run_id             uuid NOT NULL,
    queues             integer NOT NULL DEFAULT 0,
    partitions         integer NOT NULL DEFAULT 0,
    total              bigint NOT NULL DEFAULT 0,
    pending            bigint NOT NULL DEFAULT 0,
    processing         bigint NOT NULL DEFAULT 0,
    completed          bigint NOT NULL DEFAULT 0,
    dead_letter        bigint NOT NULL DEFAULT 0,
    dlq_partitions     integer NOT NULL DEFAULT 0,
    consumer_groups    integer NOT NULL DEFAULT 0,   -- (partition, group) pairs
    active_leases      integer NOT NULL DEFAULT 0,
    leased_partitions  integer NOT NULL DEFAULT 0,   -- partitions with a live lease
    leased_messages    bigint NOT NULL DEFAULT 0,    -- messages in live leased batches
    messages_consumed  bigint NOT NULL DEFAULT 0,
    batches_consumed   bigint NOT NULL DEFAULT 0,
    time_lag_max       bigint NOT NULL DEFAULT 0,    -- s, oldest unconsumed message of any pair
    offset_lag_max     bigint NOT NULL DEFAULT 0,
    lag                jsonb,                        -- queue and wider: {"time":{avg,median,min,max},"offset":{…}}
    oldest_message_at  timestamptz,
    newest_message_at  timestamptz,
    last_consumed_at   timestamptz,
    computed_at        timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX stats_queue ON stats (queue_id) WHERE scope = 'partition';

-- Lag of every (partition, consumer group) pair, from the stats job.
CREATE TABLE stats_consumers (
    partition_id         uuid NOT NULL,
    consumer_group       text NOT NULL,
    queue_id             uuid NOT NULL,
    run_id               uuid NOT NULL,
    offset_lag           bigint NOT NULL,
    time_lag             bigint NOT NULL,           -- s
    oldest_unconsumed_at timestamptz,
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX stats_consumers_queue ON stats_consumers (queue_id, consumer_group);

-- DLQ reasons and their counts per queue (the most frequent ones), for topErrors.
CREATE TABLE stats_dlq_errors (
    queue_id      uuid NOT NULL,
    error_message text NOT NULL,
    entries       bigint NOT NULL,
    PRIMARY KEY (queue_id, error_message)
);

-- Counters per queue and for the whole system, one row per minute, kept
-- STATS_HISTORY_RETENTION_DAYS (key: queue id, '' for the system).
CREATE TABLE stats_history (
    bucket       timestamptz NOT NULL,
    scope        text NOT NULL,
    key          text NOT NULL,
    queue_name   text NOT NULL,
    total        bigint NOT NULL,
    pending      bigint NOT NULL,
    processing   bigint NOT NULL,
    completed    bigint NOT NULL,
    dead_letter  bigint NOT NULL,
    time_lag_max bigint NOT NULL,
    PRIMARY KEY (bucket, scope, key)
);

-- What one instance did in one minute, flushed every METRICS_AGGREGATE_INTERVAL_S (deltas
-- added to the minute's row, so a flush can happen at any time) and kept
-- METRICS_RETENTION_DAYS. Latencies in milliseconds; gauges are the minute's largest sample.
CREATE TABLE metrics_worker_minute (
    minute         timestamptz NOT NULL,
    worker_id      text NOT NULL,
    hostname       text NOT NULL,
    pid            integer NOT NULL,
    requests       bigint NOT NULL DEFAULT 0,
    push_requests  bigint NOT NULL DEFAULT 0,
    pop_requests   bigint NOT NULL DEFAULT 0,
    pop_empty      bigint NOT NULL DEFAULT 0,
    ack_requests   bigint NOT NULL DEFAULT 0,
    transactions   bigint NOT NULL DEFAULT 0,
    push_messages  bigint NOT NULL DEFAULT 0,
    pop_messages   bigint NOT NULL DEFAULT 0,
    ack_messages   bigint NOT NULL DEFAULT 0,
    ack_success    bigint NOT NULL DEFAULT 0,
    ack_failed     bigint NOT NULL DEFAULT 0,
    db_errors      bigint NOT NULL DEFAULT 0,
    dlq            bigint NOT NULL DEFAULT 0,
    leases_expired bigint NOT NULL DEFAULT 0,
    push_ms_sum    double precision NOT NULL DEFAULT 0,
    push_ms_max    double precision NOT NULL DEFAULT 0,
    pop_ms_sum     double precision NOT NULL DEFAULT 0,
    pop_ms_max     double precision NOT NULL DEFAULT 0,
    ack_ms_sum     double precision NOT NULL DEFAULT 0,
    ack_ms_max     double precision NOT NULL DEFAULT 0,
    txn_ms_sum     double precision NOT NULL DEFAULT 0,
    txn_ms_max     double precision NOT NULL DEFAULT 0,
    lag_ms_sum     double precision NOT NULL DEFAULT 0,
    lag_count      bigint NOT NULL DEFAULT 0,
    lag_ms_max     double precision NOT NULL DEFAULT 0,
    cpu_user_us    bigint NOT NULL DEFAULT 0,        -- CPU time used in the minute
    cpu_sys_us     bigint NOT NULL DEFAULT 0,
    rss_bytes      bigint NOT NULL DEFAULT 0,
    pool_size      integer NOT NULL DEFAULT 0,
    pool_active    integer NOT NULL DEFAULT 0,
    pool_idle      integer NOT NULL DEFAULT 0,
    parked         integer NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (minute, worker_id)
);

-- The same per queue (only what can be attributed to one queue).
CREATE TABLE metrics_queue_minute (
    minute        timestamptz NOT NULL,
    worker_id     text NOT NULL,
    queue         text NOT NULL,
    push_requests bigint NOT NULL DEFAULT 0,
    push_messages bigint NOT NULL DEFAULT 0,
    pop_requests  bigint NOT NULL DEFAULT 0,
    pop_messages  bigint NOT NULL DEFAULT 0,
    pop_empty     bigint NOT NULL DEFAULT 0,
    ack_requests  bigint NOT NULL DEFAULT 0,      -- ack calls that touched the queue
    ack_messages  bigint NOT NULL DEFAULT 0,
    ack_success   bigint NOT NULL DEFAULT 0,
    ack_failed    bigint NOT NULL DEFAULT 0,
    transactions  bigint NOT NULL DEFAULT 0,
    dlq           bigint NOT NULL DEFAULT 0,
    lag_ms_sum    double precision NOT NULL DEFAULT 0,
    lag_count     bigint NOT NULL DEFAULT 0,
    lag_ms_max    double precision NOT NULL DEFAULT 0,
    parked        integer NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (minute, worker_id, queue)
);
CREATE INDEX metrics_queue_minute_queue ON metrics_queue_minute (queue, minute);

-- Running totals per instance, so the cluster counters stay monotonic however long the
-- per-minute rows are kept: the cluster value is the sum over instances.
CREATE TABLE metrics_totals (
    worker_id      text PRIMARY KEY,
    hostname       text NOT NULL,
    pid            integer NOT NULL,
    push_requests  bigint NOT NULL DEFAULT 0,
    pop_requests   bigint NOT NULL DEFAULT 0,
    ack_requests   bigint NOT NULL DEFAULT 0,
    transactions   bigint NOT NULL DEFAULT 0,
    push_messages  bigint NOT NULL DEFAULT 0,
    pop_messages   bigint NOT NULL DEFAULT 0,
    ack_messages   bigint NOT NULL DEFAULT 0,
    ack_success    bigint NOT NULL DEFAULT 0,
    ack_failed     bigint NOT NULL DEFAULT 0,
    db_errors      bigint NOT NULL DEFAULT 0,
    dlq            bigint NOT NULL DEFAULT 0,
    leases_expired bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL
);

-- No index on consumers' lease or retry columns (lease housekeeping scans the table once a
-- second on the leader instead): they change on every claim and ack, and an index on them
-- would make each of those updates non-HOT, bloating the hottest table of the pop path.
-- Retention removes tombstones whose dedup window ended.
CREATE INDEX dedup_tombstones_created ON dedup_tombstones (created_at);
