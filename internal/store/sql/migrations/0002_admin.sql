-- queen-go schema, version 2: what the admin routes need (docs/api/admin-api.md §2-§4).

-- Trace records (docs/api/admin-api.md §4): timestamped events attached to one message. The foreign key
-- on the message's dedup key removes them together with the message, whoever removes it (admin
-- delete, retention, eviction, queue deletion), as docs/api/concepts.md §11 asks, without every remover
-- having to know about traces.
CREATE TABLE traces (
    id             uuid PRIMARY KEY,            -- UUIDv7, minted by the broker
    partition_id   uuid NOT NULL,
    transaction_id text NOT NULL,
    consumer_group text NOT NULL,
    event_type     text NOT NULL,
    data           json,                        -- as sent, like payloads (docs/decisions.md)
    worker_id      text NOT NULL,
    trace_names    text[] NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL,
    FOREIGN KEY (partition_id, transaction_id)
        REFERENCES messages (partition_id, transaction_id) ON DELETE CASCADE
);
CREATE INDEX traces_message ON traces (partition_id, transaction_id, created_at);

-- One row per (trace record, name), so the by-name and names listings read an index of their
-- own instead of unnesting every record's names. Message columns are copied for the counts.
CREATE TABLE trace_names (
    trace_id       uuid NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    trace_name     text NOT NULL,
    partition_id   uuid NOT NULL,
    transaction_id text NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (trace_id, trace_name)
);
CREATE INDEX trace_names_name ON trace_names (trace_name, created_at, trace_id);

-- DLQ entries of one message (message status, detail and delete) and the newest-first listing.
CREATE INDEX dlq_message ON dlq (partition_id, message_id);
CREATE INDEX dlq_failed ON dlq (failed_at, id);
