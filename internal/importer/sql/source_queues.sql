-- Every queue of the source with its options and the counts the plan and the progress show.
-- {{storage}} is q.storage where the column exists (a per-queue storage engine), else 'rows'.
SELECT q.id, q.name, coalesce(q.namespace, ''), coalesce(q.task, ''),
       q.lease_time, q.retry_limit, q.retry_delay, q.priority, q.max_queue_size, q.ttl,
       q.dead_letter_queue, q.dlq_after_max_retries, q.delayed_processing, q.window_buffer,
       q.retention_seconds, q.completed_retention_seconds, q.retention_enabled,
       q.encryption_enabled, q.max_wait_time_seconds,
       {{storage}}::text,
       coalesce(q.created_at, 'epoch'::timestamptz),
       (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id),
       (SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id WHERE p.queue_id = q.id),
       (SELECT count(*) FROM partition_consumers c JOIN partitions p ON p.id = c.partition_id
        WHERE p.queue_id = q.id),
       (SELECT count(*) FROM dead_letter_queue d JOIN messages m ON m.id = d.message_id
        JOIN partitions p ON p.id = m.partition_id WHERE p.queue_id = q.id),
       (SELECT count(*) FROM message_traces t JOIN messages m ON m.id = t.message_id
        JOIN partitions p ON p.id = m.partition_id WHERE p.queue_id = q.id),
       (SELECT count(*) FROM message_trace_names n JOIN message_traces t ON t.id = n.trace_id
        JOIN messages m ON m.id = t.message_id JOIN partitions p ON p.id = m.partition_id
        WHERE p.queue_id = q.id)
FROM queues q
ORDER BY q.name;
