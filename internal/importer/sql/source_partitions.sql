-- A queue's partitions, with the time of their last activity for partition_heads.
SELECT p.id, p.name, coalesce(p.created_at, 'epoch'::timestamptz),
       coalesce(p.last_activity, p.created_at, 'epoch'::timestamptz)
FROM partitions p
WHERE p.queue_id = $1
ORDER BY p.id;
