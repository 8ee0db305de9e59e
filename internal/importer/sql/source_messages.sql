-- A queue's messages in queen-go's column order (COPY text format, piped straight into the
-- target's COPY). Queen delivers a partition in (created_at, id) order; that order becomes the
-- position, 1..n per partition. The payload is jsonb in Queen: its text is valid JSON.
COPY (
    SELECT m.partition_id,
           row_number() OVER (PARTITION BY m.partition_id ORDER BY m.created_at, m.id),
           m.id, m.transaction_id, m.payload::text, m.trace_id, m.producer_sub,
           coalesce(m.is_encrypted, false), m.created_at
    FROM messages m JOIN partitions p ON p.id = m.partition_id
    WHERE p.queue_id = {{queue}} AND m.created_at IS NOT NULL
) TO STDOUT
