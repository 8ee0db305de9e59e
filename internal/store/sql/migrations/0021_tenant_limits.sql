-- queen-go schema: limits per tenant (docs/api/concepts.md §14, docs/operations.md "Tenants").
-- One row per limited tenant; NULL in a column is no limit of that kind. Read by the SQL that
-- enforces the queue and stored-message limits inside the writing transaction (qg_tenant_limit,
-- sql/functions/130_tenant_limits.sql), and by every instance for the push rate, every second.
-- The default tenant ('') is the broker's own and has no limits.
CREATE TABLE tenant_limits (
    tenant       text PRIMARY KEY CHECK (tenant <> ''),
    max_queues   integer CHECK (max_queues >= 0),   -- queues the tenant may have
    max_messages bigint  CHECK (max_messages >= 0), -- unconsumed messages it may store, as maxSize counts them
    push_rate    integer CHECK (push_rate >= 0),    -- messages per second it may push, per instance
    updated_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text                               -- the token's sub; NULL with authentication off
);
