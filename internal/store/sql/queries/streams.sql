-- Streams (docs/api/streams.md).

-- The queue of a cycle's source partition, named in a rolled-back cycle's answer ($1 partition
-- id, $2 tenant).
-- name: stream_source_queue
SELECT q.name FROM partitions p JOIN queues q ON q.id = p.queue_id
WHERE p.id = $1::uuid AND q.tenant = $2;
