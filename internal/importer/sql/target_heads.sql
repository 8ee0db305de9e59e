-- A queue's partition heads after its messages were copied: the last position and the newest
-- message's time, from which pushes continue.
UPDATE partition_heads h SET last_position = s.last_position, last_message_at = s.last_message_at
FROM (SELECT m.partition_id, max(m.position) AS last_position, max(m.created_at) AS last_message_at
      FROM messages m JOIN partitions p ON p.id = m.partition_id
      WHERE p.queue_id = $1
      GROUP BY m.partition_id) s
WHERE h.partition_id = s.partition_id;
