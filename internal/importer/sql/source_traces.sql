-- A queue's trace records, attached to their message's dedup key as queen-go keeps them, with
-- their names folded in; the defaults are the ones the trace route applies.
COPY (
    SELECT t.id, m.partition_id, m.transaction_id, coalesce(t.consumer_group, '__QUEUE_MODE__'),
           coalesce(t.event_type, 'info'), t.data::text, coalesce(t.worker_id, ''),
           coalesce((SELECT array_agg(n.trace_name ORDER BY n.trace_name)
                     FROM message_trace_names n WHERE n.trace_id = t.id), '{}'),
           coalesce(t.created_at, m.created_at)
    FROM message_traces t
    JOIN messages m ON m.id = t.message_id
    JOIN partitions p ON p.id = m.partition_id
    WHERE p.queue_id = {{queue}}
) TO STDOUT
