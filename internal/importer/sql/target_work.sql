-- The pop index for an imported queue: every registered group's pairs with messages after
-- their position, ordered by the creation time of the next one (as qg_track_work lists them).
-- Without these rows pops would not look at the pairs until the next push.
INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
SELECT p.id, s.consumer_group, p.queue_id,
       (SELECT m.created_at FROM messages m
        WHERE m.partition_id = p.id AND m.position > coalesce(c.cursor, 0)
        ORDER BY m.position LIMIT 1)
FROM partitions p
JOIN partition_heads h ON h.partition_id = p.id
JOIN subscriptions s ON s.queue_id = p.queue_id
LEFT JOIN consumers c ON c.partition_id = p.id AND c.consumer_group = s.consumer_group
WHERE p.queue_id = $1 AND h.last_position > coalesce(c.cursor, 0)
ORDER BY p.id, s.consumer_group;
