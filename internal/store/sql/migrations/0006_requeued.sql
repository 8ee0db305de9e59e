-- queen-go schema, version 6: the per-group requeued set (docs/api/concepts.md §5.2, §9.2,
-- §9.3). A DLQ requeue in redeliver mode of a message at or below its group's cursor puts the
-- message here; the group's next claim of the pair serves these rows first, as a requeue
-- batch, before anything after the cursor. The cursor never moves because of them.
--
-- rq is the message's own retry counter (a requeue batch reads the largest of its messages',
-- and pops report it as retryCount); requeued_at is the requeue time; in_batch marks the
-- messages of the pair's outstanding requeue batch (set by the claim that delivered them,
-- cleared when that batch is released, reset by the next claim after its lease expired).
--
-- Both foreign keys cascade, like skip_marks: group and queue deletion remove the set with the
-- consumer rows; retention, eviction, clear and the admin delete remove a message's rows with
-- the message. A seek deletes the pair's rows explicitly (qg_place_cursor).
CREATE TABLE requeued (
    partition_id   uuid NOT NULL,
    consumer_group text NOT NULL,
    position       bigint NOT NULL,
    rq             integer NOT NULL DEFAULT 0,
    requeued_at    timestamptz NOT NULL,
    in_batch       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (partition_id, consumer_group, position),
    FOREIGN KEY (partition_id, consumer_group)
        REFERENCES consumers (partition_id, consumer_group) ON DELETE CASCADE,
    FOREIGN KEY (partition_id, position) REFERENCES messages (partition_id, position) ON DELETE CASCADE
);
-- The cascade from messages looks rows up by message.
CREATE INDEX requeued_message ON requeued (partition_id, position);
