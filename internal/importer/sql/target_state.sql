-- The target's queues and stream queries by name, and which of them an earlier run imported.
SELECT 'queue' AS kind, q.name, EXISTS (SELECT 1 FROM queen_import i WHERE i.kind = 'queue' AND i.name = q.name)
FROM queues q WHERE q.name = ANY ($1::text[])
UNION ALL
SELECT 'queue', i.name, true FROM queen_import i
WHERE i.kind = 'queue' AND i.name = ANY ($1::text[]) AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = i.name)
UNION ALL
SELECT 'stream', s.name, EXISTS (SELECT 1 FROM queen_import i WHERE i.kind = 'streams')
FROM stream_queries s WHERE s.tenant = '' AND s.name = ANY ($2::text[])
UNION ALL
SELECT 'streams', '', true FROM queen_import i WHERE i.kind = 'streams';
