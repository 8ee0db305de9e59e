-- queen-go schema, version 17: a partition's push state (the last position, the newest message's
-- createdAt, the last write) moves out of the partitions row into partition_heads (docs/design.md,
-- "Steady under a pinned horizon"). Every push updates that state; the partitions row it still
-- locks (the writers' lock) no longer changes, so its table holds no dead versions for readers
-- to walk, and partition_heads, which no other table references, can be compacted by a rewrite
-- while a held snapshot keeps VACUUM from removing them (qg_compact_hot).
CREATE TABLE partition_heads (
    partition_id     uuid PRIMARY KEY REFERENCES partitions (id) ON DELETE CASCADE,
    last_position    bigint NOT NULL DEFAULT 0,
    last_message_at  timestamptz,           -- createdAt of the newest stored message (windowBuffer)
    last_activity_at timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 10); -- room for HOT updates, as migration 0009 gave the partitions rows

INSERT INTO partition_heads (partition_id, last_position, last_message_at, last_activity_at)
SELECT p.id, p.last_position, p.last_message_at, p.last_activity_at FROM partitions p;

ALTER TABLE partitions DROP COLUMN last_position, DROP COLUMN last_message_at, DROP COLUMN last_activity_at;
-- The rows are no longer updated: packed full again as they are next rewritten.
ALTER TABLE partitions RESET (fillfactor);
