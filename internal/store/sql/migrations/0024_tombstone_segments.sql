-- queen-go schema: dedup tombstones in segments too (docs/design.md "Message storage"). The keys
-- of the messages a segment drop removes stay taken for their dedup window (docs/api/concepts.md
-- §4.3); written one by one into one table and deleted one by one when their window ended, they
-- cost what the segments spared messages. dedup_tombstones becomes a table partitioned by LIST
-- on tseg:
--
--   tseg 0, dedup_tombstones_keep: the former table; the keys of messages removed row by row
--     (retention of seg 0, eviction, clear, admin delete), deleted in batches when expired.
--   tseg n > 0, dedup_tombstones_s<n>: the keys a segment drop wrote while n was the open
--     tombstone segment (dedup_segments); dropped whole once every key in it expired.
--
-- A key may then have a tombstone in more than one tseg (removed, pushed again after its window,
-- removed again): lookups take the newest unexpired one.

ALTER TABLE dedup_tombstones RENAME TO dedup_tombstones_keep;
ALTER TABLE dedup_tombstones_keep DROP CONSTRAINT dedup_tombstones_pkey;
ALTER TABLE dedup_tombstones_keep DROP CONSTRAINT dedup_tombstones_partition_id_fkey;
ALTER TABLE dedup_tombstones_keep ADD COLUMN tseg integer NOT NULL DEFAULT 0;

CREATE TABLE dedup_tombstones (
    partition_id   uuid NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
    transaction_id text NOT NULL,
    message_id     uuid NOT NULL,
    created_at     timestamptz NOT NULL,
    tseg           integer NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, transaction_id, tseg)
) PARTITION BY LIST (tseg);
-- The created_at index stays on tseg 0 alone, whose expired keys are deleted in batches
-- (qg_cleanup_tombstones); a tombstone segment goes whole, so an index on its created_at would
-- only add upkeep to every tombstone written.
ALTER INDEX dedup_tombstones_created RENAME TO dedup_tombstones_keep_created;
ALTER TABLE dedup_tombstones ATTACH PARTITION dedup_tombstones_keep FOR VALUES IN (0);

-- The tombstone segments besides tseg 0. At most one is open (closed_at NULL): segment drops
-- write there. expires_at is when the last key written into it expires under the windows in
-- force when it was written; its drop checks the windows in force then.
CREATE TABLE dedup_segments (
    tseg       integer PRIMARY KEY CHECK (tseg > 0),
    opened_at  timestamptz NOT NULL,
    closed_at  timestamptz,
    expires_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX dedup_segments_open ON dedup_segments ((true)) WHERE closed_at IS NULL;
CREATE SEQUENCE dedup_segments_seq AS integer;
