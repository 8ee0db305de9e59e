-- The groups' positions on a queue's partitions. Queen's cursor is the (created_at, id) of the
-- last consumed message (a zero id: nothing consumed); queen-go's is a position, so it becomes
-- the number of the partition's messages at or before it. A lease in flight is not carried
-- over: its messages are delivered again, as after the lease expired. Groups subscribed in
-- modes new and timestamp ($2, $3: names and subscription times) get a position on the
-- partitions where Queen has none yet, placed as Queen would place them: messages created
-- before the subscription time count as consumed.
SELECT c.partition_id, coalesce(c.consumer_group, '__QUEUE_MODE__'),
       CASE WHEN c.last_consumed_created_at IS NULL
                 OR c.last_consumed_id = '00000000-0000-0000-0000-000000000000' THEN 0
            ELSE (SELECT count(*) FROM messages m
                  WHERE m.partition_id = c.partition_id
                    AND (m.created_at, m.id) <= (c.last_consumed_created_at, c.last_consumed_id))
       END,
       coalesce(c.total_messages_consumed, 0), coalesce(c.total_batches_consumed, 0),
       c.last_consumed_at, coalesce(c.created_at, 'epoch'::timestamptz)
FROM partition_consumers c JOIN partitions p ON p.id = c.partition_id
WHERE p.queue_id = $1
UNION ALL
SELECT p.id, s.g,
       (SELECT count(*) FROM messages m WHERE m.partition_id = p.id AND m.created_at < s.ts),
       0, 0, NULL, s.created_at
FROM partitions p
CROSS JOIN unnest($2::text[], $3::timestamptz[], $4::timestamptz[]) AS s (g, ts, created_at)
WHERE p.queue_id = $1
  AND NOT EXISTS (SELECT 1 FROM partition_consumers c
                  WHERE c.partition_id = p.id AND c.consumer_group = s.g)
ORDER BY 1, 2;
