-- queen-go schema: streams (docs/api/streams.md §1). A registration per stream query, a shard row
-- per (query, source partition) and the shard's state rows.
--
-- Cleanup follows the event table of docs/api/streams.md §1 through cascades alone, each in the
-- transaction of the deletion it accompanies: deleting a registration removes its shards and
-- their rows (query deletion, §6); deleting a partition (queue deletion, idle partition cleanup)
-- removes the shards of that partition, for every query; a consumer group's deletion or seek
-- touches none of these tables.
CREATE TABLE stream_queries (
    id           uuid PRIMARY KEY,          -- the query_id, UUIDv7, minted at first registration
    -- Tenancy (docs/api/concepts.md §14, later phase): '' until tenancy lands.
    tenant       text NOT NULL DEFAULT '',
    name         text NOT NULL,
    source_queue text NOT NULL,
    sink_queue   text,
    config_hash  text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (tenant, name)                   -- registrations of one name serialise on it
);

-- The shard lock: every cycle locks its shard row (FOR NO KEY UPDATE) after the registration,
-- the partitions and the consumer state (docs/api/streams.md §4.2 step 4), so the cycles of one
-- shard run one at a time, whether or not they hold state rows.
CREATE TABLE stream_shards (
    query_id     uuid NOT NULL REFERENCES stream_queries (id) ON DELETE CASCADE,
    partition_id uuid NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
    PRIMARY KEY (query_id, partition_id)
);
-- The cascade from partitions finds shards by partition.
CREATE INDEX stream_shards_partition ON stream_shards (partition_id);

CREATE TABLE stream_state (
    query_id     uuid NOT NULL,
    partition_id uuid NOT NULL,
    key          text NOT NULL,
    -- json, not jsonb: read back as stored, and it accepts \u0000 escapes (as message payloads).
    value        json NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (query_id, partition_id, key),
    FOREIGN KEY (query_id, partition_id) REFERENCES stream_shards (query_id, partition_id) ON DELETE CASCADE
);
