-- Which of these partitions exist in the target (stream state of others has no shard to join).
SELECT p.id FROM partitions p WHERE p.id = ANY ($1::uuid[]);
