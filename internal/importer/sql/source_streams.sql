-- The stream queries ({{streams}}: Queen's streams schema).
SELECT q.id, q.name, q.source_queue, q.sink_queue, q.config_hash,
       coalesce(q.created_at, 'epoch'::timestamptz), coalesce(q.updated_at, q.created_at, 'epoch'::timestamptz)
FROM {{streams}}.queries q
ORDER BY q.name;
