-- Deleting DLQ entries (docs/api/admin-api.md §3.3). Only entries are removed: the message, if
-- still stored, and a skip mark the entry came with stay (docs/api/concepts.md §9.1). No
-- partition or consumer row is locked: an entry is nobody's delivery state.

-- Removes one entry; false when there was none.
CREATE OR REPLACE FUNCTION qg_dlq_delete(p_id uuid)
RETURNS boolean LANGUAGE sql AS $$
    WITH gone AS (DELETE FROM dlq d WHERE d.id = p_id AND qg_sees_queue(d.queue_id) RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone);
$$;

-- Removes the named entries (repeats count once); returns the ids removed.
CREATE OR REPLACE FUNCTION qg_dlq_delete_ids(p_ids uuid[])
RETURNS SETOF text LANGUAGE sql AS $$
    DELETE FROM dlq d WHERE d.id = ANY (p_ids) AND qg_sees_queue(d.queue_id) RETURNING d.id::text;
$$;

-- Removes up to p_limit entries matching the filters (as qg_dlq_matching), oldest failedAt
-- first (ties by id), and counts the matching entries left.
CREATE OR REPLACE FUNCTION qg_dlq_delete_matching(p_queue text, p_group text, p_partition text,
    p_error text, p_from timestamptz, p_to timestamptz, p_limit integer)
RETURNS TABLE (deleted bigint, remaining bigint) LANGUAGE plpgsql AS $$
BEGIN
    WITH pick AS (
        SELECT d.id FROM qg_dlq_matching(p_queue, p_group, p_partition, p_error, p_from, p_to) d
        ORDER BY d.failed_at, d.id LIMIT p_limit
    )
    DELETE FROM dlq d USING pick WHERE d.id = pick.id;
    GET DIAGNOSTICS deleted = ROW_COUNT;
    SELECT count(*) INTO remaining FROM qg_dlq_matching(p_queue, p_group, p_partition, p_error, p_from, p_to);
    RETURN NEXT;
END $$;
