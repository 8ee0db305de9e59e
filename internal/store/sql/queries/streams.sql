-- Streams (docs/api/streams.md).

-- The queue of a cycle's source partition, named in a rolled-back cycle's answer
-- (@partition_id, @tenant).
-- name: stream_source_queue
SELECT q.name AS name FROM partitions p JOIN queues q ON q.id = p.queue_id
WHERE p.id = @partition_id::uuid AND q.tenant = @tenant;
