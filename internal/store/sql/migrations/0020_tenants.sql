-- queen-go schema: tenants (docs/api/concepts.md §14). Queue names are unique per tenant, and
-- the queues every statement sees are those of the tenant its session is scoped to.
--
-- The table moves to queue_rows and queues becomes a view of it filtered by the setting
-- qg.scope (internal/store/scope.go): 't:' and a tenant's name shows that tenant's queues;
-- unset, empty or '*' shows them all (background jobs, migrations, the operator's reads). The
-- view is simple, so it is updatable: INSERT (with ON CONFLICT), UPDATE, DELETE and row locks
-- go through to queue_rows, and an insert takes its tenant from the scope. Every function that
-- finds a queue by name or joins one is thereby answered for the caller's tenant alone. Foreign
-- keys and new columns go on queue_rows, and a new column needs the view created again (its
-- SELECT * was expanded when it was created).
--
-- Existing queues keep tenant '', the default tenant of every token without the tenant claim
-- and of every request when authentication is off: an existing broker upgrades in place.
ALTER TABLE queues RENAME TO queue_rows;
ALTER TABLE queue_rows DROP CONSTRAINT queues_name_key;
ALTER TABLE queue_rows ADD CONSTRAINT queue_rows_tenant_name_key UNIQUE (tenant, name);
-- Lookups by name alone (a scope of every tenant, the checks of the view's filter after it).
CREATE INDEX queue_rows_name ON queue_rows (name);

CREATE VIEW queues AS
    SELECT * FROM queue_rows r
    WHERE coalesce(current_setting('qg.scope', true), '') = ''
       OR current_setting('qg.scope', true) = '*'
       OR current_setting('qg.scope', true) = 't:' || r.tenant;

ALTER VIEW queues ALTER COLUMN tenant SET DEFAULT
    coalesce(substr(nullif(nullif(current_setting('qg.scope', true), ''), '*'), 3), '');
