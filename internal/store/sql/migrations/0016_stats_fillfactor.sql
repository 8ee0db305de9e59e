-- queen-go schema, version 16: room for HOT updates of the stats job's per-partition and per-pair
-- rows. The job now updates them in place each run (qg_stats_partitions); with room on their
-- page the new versions are HOT, so the indexes gain no entries and page pruning reclaims the
-- old versions without vacuum (as migration 0009 does for partitions). Existing rows move to
-- such pages as they are next updated off a full page.
ALTER TABLE stats SET (fillfactor = 50);
ALTER TABLE stats_consumers SET (fillfactor = 50);
