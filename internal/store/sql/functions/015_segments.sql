-- Message segments (migration 0023, docs/design.md "Message storage"): where a push writes.

-- The open segment, or 0 when none is open (no queue had retention at the last retention run).
CREATE OR REPLACE FUNCTION qg_open_segment()
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT s.seg FROM message_segments s WHERE s.closed_at IS NULL), 0);
$$;

-- Of p_qids, the queues whose messages go to the open segment: those with a retention rule in
-- force. The others' go to seg 0, where nothing is dropped whole.
CREATE OR REPLACE FUNCTION qg_segmented_queues(p_qids uuid[])
RETURNS uuid[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(q.id), '{}') FROM queue_rows q
    WHERE q.id = ANY (p_qids) AND q.retention_enabled
      AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0);
$$;
