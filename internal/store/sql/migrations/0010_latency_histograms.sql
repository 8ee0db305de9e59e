-- queen-go schema: operation latency histograms per instance and minute, so that the
-- worker-metrics route can answer p50/p95/p99 (docs/api/admin-api.md §6, dashboard M13).
-- Each array counts the minute's requests per bucket of mq.LatencyBoundsMs (1, 2, 5, 10, 25,
-- 50, 100, 250, 500, 1,000, 2,500, 5,000, 10,000 ms, then the slower ones): 14 counts. Rows
-- written before this migration get zeros, which the route reads as "no histogram" (null).
-- Adding a column with a constant default rewrites nothing.
ALTER TABLE metrics_worker_minute
    ADD COLUMN push_ms_hist bigint[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0,0,0,0,0,0}',
    ADD COLUMN pop_ms_hist  bigint[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0,0,0,0,0,0}',
    ADD COLUMN ack_ms_hist  bigint[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0,0,0,0,0,0}',
    ADD COLUMN txn_ms_hist  bigint[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0,0,0,0,0,0}';
