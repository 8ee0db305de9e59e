-- Message segments (migration 0023, docs/design.md "Message storage"): where a push writes.

-- The open segment, or 0 when none is open (no queue had retention at the last retention run).
-- PL/pgSQL, not SQL, as qg_segmented_queues: PostgreSQL 15 cannot inline an SQL function whose
-- body reads a table, and plans its body again in every statement that calls it (about 80 µs
-- here, a tenth of a single-message push call's database time); PL/pgSQL keeps the plan for the
-- session.
CREATE OR REPLACE FUNCTION qg_open_segment()
RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_seg integer;
BEGIN
    SELECT s.seg INTO v_seg FROM message_segments s WHERE s.closed_at IS NULL;
    RETURN coalesce(v_seg, 0);
END $$;

-- Of p_qids, the queues whose messages go to the open segment: those with a retention rule in
-- force. The others' go to seg 0, where nothing is dropped whole.
CREATE OR REPLACE FUNCTION qg_segmented_queues(p_qids uuid[])
RETURNS uuid[] LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(q.id), '{}') FROM queue_rows q
            WHERE q.id = ANY (p_qids) AND q.retention_enabled
              AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0));
END $$;
