-- The names of a queue's trace records, one row per (record, name).
COPY (
    SELECT n.trace_id, n.trace_name, m.partition_id, m.transaction_id,
           coalesce(t.created_at, m.created_at)
    FROM message_trace_names n
    JOIN message_traces t ON t.id = n.trace_id
    JOIN messages m ON m.id = t.message_id
    JOIN partitions p ON p.id = m.partition_id
    WHERE p.queue_id = {{queue}}
) TO STDOUT
