-- Whether the session's tenant scope (the setting qg.scope, internal/store/scope.go) sees the
-- rows of tenant p_tenant: the filter of the view queues (migration 0020), for the tables that
-- name a tenant without joining a queue (the per-queue series of migration 0022). SQL and
-- STABLE, so the planner inlines it into the statements that call it.
CREATE FUNCTION qg_scope_sees(p_tenant text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('qg.scope', true), '') IN ('', '*')
        OR current_setting('qg.scope', true) = 't:' || p_tenant
$$;
