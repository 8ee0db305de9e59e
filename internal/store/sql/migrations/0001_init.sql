-- queen-go schema, version 1. Applied inside the schema named by DB_SCHEMA (search_path is set).

CREATE TABLE queues (
    id                          uuid PRIMARY KEY,
    name                        text NOT NULL UNIQUE,
    namespace                   text NOT NULL,
    task                        text NOT NULL,
    lease_time                  integer NOT NULL DEFAULT 300,
    retry_limit                 integer NOT NULL DEFAULT 3,
    retry_delay                 integer NOT NULL DEFAULT 1000,
    priority                    integer NOT NULL DEFAULT 0,
    max_size                    integer NOT NULL DEFAULT 0,
    ttl                         integer NOT NULL DEFAULT 3600,
    dead_letter_queue           boolean NOT NULL DEFAULT false,
    dlq_after_max_retries       boolean NOT NULL DEFAULT false,
    delayed_processing          integer NOT NULL DEFAULT 0,
    window_buffer               integer NOT NULL DEFAULT 0,
    retention_seconds           integer NOT NULL DEFAULT 0,
    completed_retention_seconds integer NOT NULL DEFAULT 0,
    retention_enabled           boolean NOT NULL DEFAULT false,
    encryption_enabled          boolean NOT NULL DEFAULT false,
    max_wait_time_seconds       integer NOT NULL DEFAULT 0,
    dedup_window_seconds        integer NOT NULL DEFAULT 900,
    -- Tenancy (docs/api/concepts.md §14, later phase): '' is the single default tenant every queue has
    -- until tenancy lands; the transaction route already refuses acks across tenants.
    tenant                      text NOT NULL DEFAULT '',
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX queues_namespace_task ON queues (namespace, task);

-- A partition row is the writers' lock: every writer locks it before allocating positions,
-- so positions are handed out in commit order (spec docs/api/concepts.md §4.2).
CREATE TABLE partitions (
    id               uuid PRIMARY KEY,
    queue_id         uuid NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    name             text NOT NULL,
    last_position    bigint NOT NULL DEFAULT 0,
    last_message_at  timestamptz,           -- createdAt of the newest stored message (windowBuffer)
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
);

-- No foreign key to partitions: a per-row check would cost every push as much as a third of
-- its insert, and it would guard nothing, since a writer holds the partition row locked while
-- it inserts. The paths that delete partitions (queue deletion, idle-partition cleanup) delete
-- their messages themselves.
CREATE TABLE messages (
    partition_id   uuid NOT NULL,
    position       bigint NOT NULL,
    id             uuid NOT NULL,
    transaction_id text NOT NULL,
    -- json, not jsonb: stored and returned as the producer wrote it (no re-encoding on either
    -- path), and it accepts every JSON text, including \u0000 escapes jsonb rejects.
    payload        json,
    trace_id       uuid,
    producer_sub   text,
    encrypted      boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (partition_id, position),
    UNIQUE (partition_id, transaction_id)
);

-- Keys of removed messages stay taken until their dedup window ends (docs/api/concepts.md §4.3).
CREATE TABLE dedup_tombstones (
    partition_id   uuid NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
    transaction_id text NOT NULL,
    message_id     uuid NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (partition_id, transaction_id)
);

-- Consumer state per (partition, consumer group), docs/api/concepts.md §5.2.
CREATE TABLE consumers (
    partition_id       uuid NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
    consumer_group     text NOT NULL,
    queue_id           uuid NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    cursor             bigint NOT NULL DEFAULT 0,
    lease_id           uuid,
    lease_expires_at   timestamptz,
    batch_end          bigint,
    retry_count        integer NOT NULL DEFAULT 0,
    retry_not_before   timestamptz,
    messages_consumed  bigint NOT NULL DEFAULT 0,
    batches_consumed   bigint NOT NULL DEFAULT 0,
    last_consumed_at   timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
);
-- Deliberately no index on lease_id (or any column a claim or ack changes): those updates then
-- stay HOT, which keeps the rows of busy pairs from bloating under many consumers. Looking a
-- lease up by id (lease extension) scans the table; it is rare next to claims and acks.
CREATE INDEX consumers_queue_group ON consumers (queue_id, consumer_group);

-- The (partition, group) pairs of registered groups that may have messages after their cursor:
-- the index a pop walks instead of scanning every partition of a queue, so discovery costs
-- O(partitions with work). A push adds a pair per registered group for each partition it wrote
-- (ON CONFLICT DO NOTHING: no lock on consumer rows, so lock order is unaffected); a pop removes
-- a pair only when, under a share lock on the partition row that no writer holds, its cursor
-- has reached the last position. A row may be stale (nothing left): pops clear those as they
-- meet them. next_at orders the walk: roughly the creation time of the pair's next message.
CREATE TABLE partition_work (
    partition_id   uuid NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
    consumer_group text NOT NULL,
    queue_id       uuid NOT NULL,
    next_at        timestamptz NOT NULL,
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX partition_work_order ON partition_work (queue_id, consumer_group, next_at);

-- Groups registered on a queue (docs/api/concepts.md §5.3). Queue mode registers too, always as mode
-- all, so that pushes know which groups to list in partition_work.
CREATE TABLE subscriptions (
    queue_id               uuid NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    consumer_group         text NOT NULL,
    mode                   text NOT NULL,          -- all | new | timestamp
    subscription_timestamp timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);

CREATE TABLE dlq (
    id             uuid PRIMARY KEY,
    queue_id       uuid NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    partition_id   uuid NOT NULL,
    queue_name     text NOT NULL,
    partition_name text NOT NULL,
    consumer_group text NOT NULL,
    message_id     uuid NOT NULL,
    transaction_id text NOT NULL,
    error_message  text NOT NULL,
    retry_count    integer NOT NULL,
    payload        json,
    trace_id       uuid,
    producer_sub   text,
    encrypted      boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL,
    failed_at      timestamptz NOT NULL
);
CREATE INDEX dlq_queue_failed ON dlq (queue_id, failed_at);

-- Which function bodies are installed (functions are re-applied when their text changes).
CREATE TABLE function_versions (
    id   integer PRIMARY KEY CHECK (id = 1),
    hash text NOT NULL
);

-- The row types the hot-path functions return (qg_push_plan, qg_popped, qg_ack_result,
-- qg_txn_result) are defined in their function files (sql/functions) and re-created with them.
