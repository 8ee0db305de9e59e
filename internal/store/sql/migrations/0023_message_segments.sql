-- queen-go schema: messages stored in segments (docs/design.md, "Message storage";
-- docs/decisions.md). messages becomes a table partitioned by LIST on seg:
--
--   seg 0, messages_keep: the messages of queues without retention, and those retention cannot
--     remove yet when their segment goes: removed row by row, as before (retention, eviction,
--     clear, admin delete). The table that held every message until now becomes this one.
--   seg n > 0, messages_s<n>: the messages pushed to queues with retention while segment n was
--     the open one (message_segments). Retention drops a segment whole once the shortest
--     retention has passed since it closed, moving the rows it cannot remove yet to seg 0
--     first: its cost is the rows that stay, not the rows that go.
--
-- A unique index of a partitioned table must hold the partition key, so positions and dedup
-- keys are unique per segment here; across segments they are by construction (positions are
-- handed out under the partition row's lock; a key is looked up in every segment, under the
-- same lock, before it is written: docs/api/concepts.md §4.2, §4.3).
--
-- Foreign keys cannot point at (partition_id, position) or (partition_id, transaction_id) any
-- more, so the trace records, skip marks and requeued rows of a removed message go with it
-- through a statement trigger of messages (qg_message_gone, 010_partitions.sql), and a dropped
-- segment removes those of its rows itself.
--
-- The upgrade is in place: the old table gains seg (a constant default: no rewrite), its two
-- unique indexes are built again with seg (the pause of this step: about a second per million
-- messages on a small server), and it is attached as seg 0 (one scan).

ALTER TABLE traces DROP CONSTRAINT traces_partition_id_transaction_id_fkey;
ALTER TABLE skip_marks DROP CONSTRAINT skip_marks_partition_id_position_fkey;
ALTER TABLE requeued DROP CONSTRAINT requeued_partition_id_position_fkey;

ALTER TABLE messages RENAME TO messages_keep;
ALTER TABLE messages_keep DROP CONSTRAINT messages_pkey;
ALTER TABLE messages_keep DROP CONSTRAINT messages_partition_id_transaction_id_key;
DROP INDEX messages_trace_id;
ALTER TABLE messages_keep ADD COLUMN seg integer NOT NULL DEFAULT 0;

CREATE TABLE messages (
    partition_id   uuid NOT NULL,
    position       bigint NOT NULL,
    id             uuid NOT NULL,
    transaction_id text NOT NULL,
    payload        json,
    trace_id       uuid,
    producer_sub   text,
    encrypted      boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL,
    seg            integer NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, position, seg),
    UNIQUE (partition_id, transaction_id, seg)
) PARTITION BY LIST (seg);
CREATE INDEX messages_trace_id ON messages (trace_id) WHERE trace_id IS NOT NULL;

-- Builds messages_keep's three indexes as the parent's.
ALTER TABLE messages ATTACH PARTITION messages_keep FOR VALUES IN (0);

-- The segments that exist besides seg 0. At most one is open (closed_at NULL): pushes to
-- queues with retention go there. Retention opens the next when the open one is older than its
-- width, and drops a closed one once the shortest retention has passed since it closed.
CREATE TABLE message_segments (
    seg       integer PRIMARY KEY CHECK (seg > 0),
    opened_at timestamptz NOT NULL,
    closed_at timestamptz
);
CREATE UNIQUE INDEX message_segments_open ON message_segments ((true)) WHERE closed_at IS NULL;
CREATE SEQUENCE message_segments_seq AS integer;

-- What the foreign keys' cascades did: the trace records, skip marks and requeued rows of the
-- messages a DELETE removed go with them, in one statement each over the statement's rows. (A
-- row retention moves from a segment to seg 0 is an UPDATE: it fires no DELETE trigger.) Not
-- named qg_*: installFunctions drops those, and the trigger depends on it.
CREATE FUNCTION messages_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM traces t USING gone g
    WHERE t.partition_id = g.partition_id AND t.transaction_id = g.transaction_id;
    DELETE FROM skip_marks s USING gone g WHERE s.partition_id = g.partition_id AND s.position = g.position;
    DELETE FROM requeued r USING gone g WHERE r.partition_id = g.partition_id AND r.position = g.position;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_gone AFTER DELETE ON messages
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION messages_gone();
