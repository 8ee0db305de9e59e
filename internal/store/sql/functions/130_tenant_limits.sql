-- Limits per tenant (migration 0021, docs/api/concepts.md §14). The queue and stored-message
-- limits are enforced inside the transaction that would pass them: the writer locks its
-- tenant's limits row (only when that kind of limit is set), writes, counts, and raises QG020
-- when the count is above the limit, so the whole statement — a push batch, a queue creation —
-- is rolled back and nothing is half-written. Every writer of a limited tenant waits for that
-- row lock, so two writers cannot both pass the last free place. Lock order: the tenant's
-- limits row before any queue, partition or consumer row.

-- The tenant the session is scoped to (store/scope.go); NULL when it sees every tenant.
CREATE OR REPLACE FUNCTION qg_scope_tenant() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN current_setting('qg.scope', true) LIKE 't:%'
                THEN substr(current_setting('qg.scope', true), 3) END;
$$;

-- The session tenant's limit of p_kind ('queues' or 'messages'), with its limits row locked
-- until the transaction ends; NULL (and no lock) when the tenant has no such limit.
CREATE OR REPLACE FUNCTION qg_tenant_limit(p_kind text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_tenant text := qg_scope_tenant();
    v_limit  bigint;
BEGIN
    IF v_tenant IS NULL OR v_tenant = '' THEN
        RETURN NULL;
    END IF;
    SELECT CASE p_kind WHEN 'queues' THEN l.max_queues::bigint WHEN 'messages' THEN l.max_messages END
    INTO v_limit
    FROM tenant_limits l
    WHERE l.tenant = v_tenant
      AND CASE p_kind WHEN 'queues' THEN l.max_queues::bigint WHEN 'messages' THEN l.max_messages END IS NOT NULL
    FOR NO KEY UPDATE;
    RETURN v_limit;
END $$;

-- Raises QG020 when the session tenant's count of p_kind is above p_limit (NULL: no limit).
-- Called after the write, in a statement of its own (a fresh snapshot, after the lock that
-- qg_tenant_limit took), so the count holds the write and every committed one before it.
CREATE OR REPLACE FUNCTION qg_check_tenant_limit(p_kind text, p_limit bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_tenant text := qg_scope_tenant();
    v_count  bigint;
BEGIN
    IF p_limit IS NULL THEN
        RETURN;
    END IF;
    IF p_kind = 'queues' THEN
        SELECT count(*) INTO v_count FROM queue_rows r WHERE r.tenant = v_tenant;
    ELSE
        SELECT coalesce(sum(qg_unconsumed_count(r.id)), 0) INTO v_count FROM queue_rows r WHERE r.tenant = v_tenant;
    END IF;
    IF v_count > p_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'QG020', MESSAGE = 'QG020',
            DETAIL = json_build_array(p_kind, p_limit::text)::text;
    END IF;
END $$;

-- Sets (or, with every limit NULL, removes) a tenant's limits; returns the row as stored.
CREATE OR REPLACE FUNCTION qg_set_tenant_limits(p_tenant text, p_max_queues integer, p_max_messages bigint,
    p_push_rate integer, p_by text)
RETURNS SETOF tenant_limits LANGUAGE plpgsql AS $$
BEGIN
    IF p_max_queues IS NULL AND p_max_messages IS NULL AND p_push_rate IS NULL THEN
        DELETE FROM tenant_limits l WHERE l.tenant = p_tenant;
        RETURN;
    END IF;
    RETURN QUERY
    INSERT INTO tenant_limits AS l (tenant, max_queues, max_messages, push_rate, updated_at, updated_by)
    VALUES (p_tenant, p_max_queues, p_max_messages, p_push_rate, now(), p_by)
    ON CONFLICT (tenant) DO UPDATE SET max_queues = EXCLUDED.max_queues, max_messages = EXCLUDED.max_messages,
        push_rate = EXCLUDED.push_rate, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
    RETURNING l.*;
END $$;
