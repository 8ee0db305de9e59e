-- The groups registered on a queue: every group with a position on one of its partitions
-- (queue mode is '__QUEUE_MODE__'), and the named groups Queen recorded a subscription for
-- (modes new and timestamp live in consumer_groups_metadata; mode all has no row there). A
-- recorded subscription counts when it names the queue, or when it matched the queue by
-- namespace or task and the group has a position on it. The most specific row wins.
WITH q AS (
    SELECT q.id, q.name, coalesce(q.namespace, '') AS ns, coalesce(q.task, '') AS task
    FROM queues q WHERE q.id = $1
), positions AS (
    SELECT coalesce(c.consumer_group, '__QUEUE_MODE__') AS g, min(c.created_at) AS created_at
    FROM partition_consumers c JOIN partitions p ON p.id = c.partition_id
    WHERE p.queue_id = $1
    GROUP BY 1
), meta AS (
    SELECT DISTINCT ON (m.consumer_group)
           m.consumer_group AS g, m.subscription_mode AS mode, m.subscription_timestamp AS ts,
           m.created_at
    FROM consumer_groups_metadata m, q
    WHERE m.subscription_mode IN ('new', 'timestamp') AND m.consumer_group <> '__QUEUE_MODE__'
      AND (m.queue_name = q.name
           OR (m.queue_name = '' AND (m.namespace <> '' OR m.task <> '')
               AND m.namespace IN ('', q.ns) AND m.task IN ('', q.task)
               AND m.consumer_group IN (SELECT g FROM positions)))
    ORDER BY m.consumer_group, (m.queue_name = q.name) DESC, (m.partition_name = '') DESC, m.created_at
)
SELECT coalesce(p.g, m.g),
       coalesce(m.mode, 'all'),
       m.ts,
       coalesce(m.created_at, p.created_at, 'epoch'::timestamptz)
FROM positions p FULL JOIN meta m ON m.g = p.g
ORDER BY 1;
