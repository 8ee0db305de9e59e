-- A queue's dead letters with their message (Queen keeps no payload copy in the DLQ row; the
-- message row stays until retention removes both).
COPY (
    SELECT d.id, p.queue_id, m.partition_id, q.name, p.name,
           coalesce(d.consumer_group, '__QUEUE_MODE__'), m.id, m.transaction_id,
           coalesce(d.error_message, ''), coalesce(d.retry_count, 0), m.payload::text, m.trace_id,
           m.producer_sub, coalesce(m.is_encrypted, false),
           coalesce(d.original_created_at, m.created_at), coalesce(d.failed_at, m.created_at)
    FROM dead_letter_queue d
    JOIN messages m ON m.id = d.message_id
    JOIN partitions p ON p.id = m.partition_id
    JOIN queues q ON q.id = p.queue_id
    WHERE p.queue_id = {{queue}}
) TO STDOUT
