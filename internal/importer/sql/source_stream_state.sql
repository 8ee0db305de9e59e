-- The stream queries' state rows, per (query, source partition, key).
SELECT s.query_id, s.partition_id, s.key, s.value::text, coalesce(s.updated_at, 'epoch'::timestamptz)
FROM {{streams}}.state s
ORDER BY s.query_id, s.partition_id, s.key;
