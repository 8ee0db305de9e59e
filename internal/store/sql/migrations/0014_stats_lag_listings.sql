-- queen-go schema, version 14: the consumer-group listings (GET /api/v1/consumer-groups and
-- /consumer-groups/lagging, docs/api/admin-api.md §7) read the lag the stats job stores per
-- (partition, group) pair instead of computing it per request, which took seconds at 30,000
-- pairs (docs/decisions.md). The pair's queue and partition names are kept with it, so a
-- listing orders and pages that one table and reads the consumers table only for its page
-- (names never change). Rows written before this migration get '' until the next stats run
-- rewrites them. Adding a column with a constant default rewrites nothing.
ALTER TABLE stats_consumers
    ADD COLUMN queue_name     text NOT NULL DEFAULT '',
    ADD COLUMN partition_name text NOT NULL DEFAULT '';

-- The overview's ingest throughput (docs/api/admin-api.md §1) is counted by the stats job too,
-- into its system row: messages written in the 60 s before the run. Counted per request it
-- walked every partition written in that minute.
ALTER TABLE stats ADD COLUMN ingested_last_minute bigint NOT NULL DEFAULT 0;
