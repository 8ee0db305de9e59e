-- queen-go schema, version 4: skip marks (docs/api/concepts.md §5.2, §9.1). A message moved to
-- the DLQ by request for a group while it lies after the group's cursor gets a mark; that
-- group's deliveries pass over it while the messages around it keep their order. A mark at or
-- below its pair's cursor means nothing (every reader looks after the cursor only) and is
-- dropped lazily by the next claim, or at once by a seek.
--
-- Both foreign keys cascade, so whoever removes the consumer state (group or queue deletion)
-- or the message (retention, eviction, clear, admin delete) removes its marks with no code of
-- its own. Inserting a mark takes KEY SHARE on the consumer row, which the writer already holds
-- locked, and on the message row, which nobody updates.
CREATE TABLE skip_marks (
    partition_id   uuid NOT NULL,
    consumer_group text NOT NULL,
    position       bigint NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (partition_id, consumer_group, position),
    FOREIGN KEY (partition_id, consumer_group)
        REFERENCES consumers (partition_id, consumer_group) ON DELETE CASCADE,
    FOREIGN KEY (partition_id, position) REFERENCES messages (partition_id, position) ON DELETE CASCADE
);
-- The cascade from messages looks marks up by message.
CREATE INDEX skip_marks_message ON skip_marks (partition_id, position);
