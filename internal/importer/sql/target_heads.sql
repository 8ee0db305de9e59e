-- A queue's partition heads after its messages were copied: the last position and the newest
-- message's time and id, from which pushes continue.
UPDATE partition_heads h SET last_position = s.last_position, last_message_at = s.last_message_at,
                             last_message_id = s.last_message_id
FROM (SELECT DISTINCT ON (m.partition_id) m.partition_id, m.position AS last_position,
             max(m.created_at) OVER (PARTITION BY m.partition_id) AS last_message_at, m.id AS last_message_id
      FROM messages m JOIN partitions p ON p.id = m.partition_id
      WHERE p.queue_id = $1
      ORDER BY m.partition_id, m.position DESC) s
WHERE h.partition_id = s.partition_id;
