-- queen-go schema: the per-queue series are kept per tenant (docs/api/concepts.md §14). The
-- per-minute metrics, the stats history and the retention history name a queue, and two
-- tenants may each have a queue of that name: each row now also names the queue's tenant, and
-- the reads keep the rows of the tenants the session's qg.scope sees (qg_scope_sees). The
-- series keep the tenant and the name rather than the queue's id so that a queue's history
-- outlives the queue, as it did before.
--
-- Rows written before this migration belong to the default tenant '', except the history rows
-- whose queue still exists, which take that queue's tenant.
ALTER TABLE metrics_queue_minute ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE metrics_queue_minute DROP CONSTRAINT metrics_queue_minute_pkey;
ALTER TABLE metrics_queue_minute ADD CONSTRAINT metrics_queue_minute_pkey PRIMARY KEY (minute, worker_id, tenant, queue);
DROP INDEX metrics_queue_minute_queue;
CREATE INDEX metrics_queue_minute_queue ON metrics_queue_minute (tenant, queue, minute);

ALTER TABLE stats_history ADD COLUMN tenant text NOT NULL DEFAULT '';
UPDATE stats_history h SET tenant = q.tenant
FROM queue_rows q WHERE h.scope = 'queue' AND h.key = q.id::text AND q.tenant <> '';

ALTER TABLE retention_history ADD COLUMN tenant text NOT NULL DEFAULT '';
UPDATE retention_history h SET tenant = q.tenant FROM queue_rows q WHERE h.queue_id = q.id AND q.tenant <> '';
DROP INDEX retention_history_queue;
CREATE INDEX retention_history_queue ON retention_history (tenant, queue_name, run_at);
