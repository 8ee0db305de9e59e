-- The queue listings GET /api/v1/resources/queues and GET /api/v1/status/queues
-- (docs/api/admin-api.md "Listing parameters", §1, §5.2; dashboard M6). Which queues exist and
-- how many partitions each has are read live; the counters, DLQ entries and lag come from the
-- stats job's queue rows (zeros until a run has seen the queue), so a page at 10,000 queues
-- costs the queues table and one stats row per queue, never a scan of messages.

-- Queues matching every given filter (NULL = any). p_search is a literal, case-insensitive
-- substring of the queue name (position(), not LIKE, so %, _ and \ are plain characters).
CREATE OR REPLACE FUNCTION qg_queues_matching(p_namespace text, p_task text, p_search text)
RETURNS SETOF uuid LANGUAGE sql STABLE AS $$
    SELECT q.id FROM queues q
    WHERE (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task)
      AND (p_search IS NULL OR position(lower(p_search) IN lower(q.name)) > 0);
$$;

-- How many queues match, and when the stats were last rolled up (NULL before the first run).
CREATE OR REPLACE FUNCTION qg_queues_total(p_namespace text, p_task text, p_search text)
RETURNS TABLE (total bigint, stats_at timestamptz) LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM qg_queues_matching(p_namespace, p_task, p_search)),
           (SELECT max(s.computed_at) FROM stats s WHERE s.scope = 'system');
$$;

-- A page of the matching queues. p_sort is one of name, createdAt, namespace, task,
-- partitions, total, pending, processing, deadLetter, lag (checked by the caller); every order
-- ends with the queue name and id, so pages neither overlap nor skip while the data stands
-- still. Ordered by a column of the queues table, the page is cut from the queues alone and
-- only its rows read their stats row and count their partitions (joining 10,000 stats rows
-- first cost most of the request); ordered by a counter, every matching queue's stats row is
-- read, and the partition counts of all queues are grouped in one scan only when they are the
-- sort key. Each branch is gated on p_sort (a one-time filter); the outer order sorts the page.
CREATE OR REPLACE FUNCTION qg_list_queues(p_namespace text, p_task text, p_search text,
    p_sort text, p_desc boolean, p_limit integer, p_offset integer)
RETURNS TABLE (id text, name text, namespace text, task text, created_at timestamptz, partitions bigint,
               total bigint, pending bigint, processing bigint, dead_letter bigint, max_time_lag bigint)
LANGUAGE sql STABLE AS $$
    SELECT x.* FROM (
        (SELECT q.id::text, q.name, q.namespace, q.task, q.created_at,
                (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id),
                coalesce(s.total, 0), coalesce(s.pending, 0), coalesce(s.processing, 0),
                coalesce(s.dead_letter, 0), coalesce(s.time_lag_max, 0)
         FROM (SELECT q.id, q.name, q.namespace, q.task, q.created_at
               FROM queues q
               WHERE p_sort IN ('name', 'namespace', 'task', 'createdAt')
                 AND q.id IN (SELECT qg_queues_matching(p_namespace, p_task, p_search))
               ORDER BY
                   CASE WHEN p_sort = 'name' AND NOT p_desc THEN q.name END,
                   CASE WHEN p_sort = 'name' AND p_desc THEN q.name END DESC,
                   CASE WHEN p_sort = 'namespace' AND NOT p_desc THEN q.namespace END,
                   CASE WHEN p_sort = 'namespace' AND p_desc THEN q.namespace END DESC,
                   CASE WHEN p_sort = 'task' AND NOT p_desc THEN q.task END,
                   CASE WHEN p_sort = 'task' AND p_desc THEN q.task END DESC,
                   CASE WHEN p_sort = 'createdAt' AND NOT p_desc THEN q.created_at END,
                   CASE WHEN p_sort = 'createdAt' AND p_desc THEN q.created_at END DESC,
                   q.name, q.id
               LIMIT p_limit OFFSET p_offset) q
         LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text)
        UNION ALL
        (SELECT q.id::text, q.name, q.namespace, q.task, q.created_at,
                (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id),
                coalesce(s.total, 0), coalesce(s.pending, 0), coalesce(s.processing, 0),
                coalesce(s.dead_letter, 0), coalesce(s.time_lag_max, 0)
         FROM queues q
         LEFT JOIN stats s ON s.scope = 'queue' AND s.key = q.id::text
         LEFT JOIN (SELECT p.queue_id, count(*) AS n FROM partitions p WHERE p_sort = 'partitions'
                    GROUP BY p.queue_id) pc ON pc.queue_id = q.id
         WHERE p_sort NOT IN ('name', 'namespace', 'task', 'createdAt')
           AND q.id IN (SELECT qg_queues_matching(p_namespace, p_task, p_search))
         ORDER BY
             CASE WHEN NOT p_desc THEN CASE p_sort
                 WHEN 'partitions' THEN coalesce(pc.n, 0)
                 WHEN 'total' THEN coalesce(s.total, 0) WHEN 'pending' THEN coalesce(s.pending, 0)
                 WHEN 'processing' THEN coalesce(s.processing, 0) WHEN 'deadLetter' THEN coalesce(s.dead_letter, 0)
                 WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END,
             CASE WHEN p_desc THEN CASE p_sort
                 WHEN 'partitions' THEN coalesce(pc.n, 0)
                 WHEN 'total' THEN coalesce(s.total, 0) WHEN 'pending' THEN coalesce(s.pending, 0)
                 WHEN 'processing' THEN coalesce(s.processing, 0) WHEN 'deadLetter' THEN coalesce(s.dead_letter, 0)
                 WHEN 'lag' THEN coalesce(s.time_lag_max, 0) END END DESC,
             q.name, q.id
         LIMIT p_limit OFFSET p_offset)
    ) x (id, name, namespace, task, created_at, partitions, total, pending, processing, dead_letter, max_time_lag)
    ORDER BY
        CASE WHEN p_sort = 'name' AND NOT p_desc THEN x.name END,
        CASE WHEN p_sort = 'name' AND p_desc THEN x.name END DESC,
        CASE WHEN p_sort = 'namespace' AND NOT p_desc THEN x.namespace END,
        CASE WHEN p_sort = 'namespace' AND p_desc THEN x.namespace END DESC,
        CASE WHEN p_sort = 'task' AND NOT p_desc THEN x.task END,
        CASE WHEN p_sort = 'task' AND p_desc THEN x.task END DESC,
        CASE WHEN p_sort = 'createdAt' AND NOT p_desc THEN x.created_at END,
        CASE WHEN p_sort = 'createdAt' AND p_desc THEN x.created_at END DESC,
        CASE WHEN NOT p_desc THEN CASE p_sort
            WHEN 'partitions' THEN x.partitions WHEN 'total' THEN x.total WHEN 'pending' THEN x.pending
            WHEN 'processing' THEN x.processing WHEN 'deadLetter' THEN x.dead_letter
            WHEN 'lag' THEN x.max_time_lag END END,
        CASE WHEN p_desc THEN CASE p_sort
            WHEN 'partitions' THEN x.partitions WHEN 'total' THEN x.total WHEN 'pending' THEN x.pending
            WHEN 'processing' THEN x.processing WHEN 'deadLetter' THEN x.dead_letter
            WHEN 'lag' THEN x.max_time_lag END END DESC,
        x.name, x.id;
$$;

-- Namespaces (p_by_task false) or tasks holding p_search (a literal, case-insensitive
-- substring of the label; NULL = all), for GET /api/v1/resources/namespaces and /tasks
-- (docs/api/admin-api.md §1, "Listing parameters"). Queue and partition counts are live; the
-- message counters come from the stats job's namespace and task rows.
CREATE OR REPLACE FUNCTION qg_labels_total(p_by_task boolean, p_search text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(DISTINCT CASE WHEN p_by_task THEN q.task ELSE q.namespace END) FROM queues q
    WHERE p_search IS NULL
       OR position(lower(p_search) IN lower(CASE WHEN p_by_task THEN q.task ELSE q.namespace END)) > 0;
$$;

-- A page of those labels. p_sort is one of name, queues, pending (checked by the caller);
-- every order ends with the label.
CREATE OR REPLACE FUNCTION qg_list_labels(p_by_task boolean, p_search text, p_sort text, p_desc boolean,
    p_limit integer, p_offset integer)
RETURNS TABLE (label text, queues bigint, partitions bigint, total bigint, pending bigint)
LANGUAGE sql STABLE AS $$
    WITH labels AS (
        SELECT CASE WHEN p_by_task THEN q.task ELSE q.namespace END AS label, count(*) AS queues,
               coalesce(sum(pc.n), 0)::bigint AS partitions
        FROM queues q
        LEFT JOIN (SELECT p.queue_id, count(*) AS n FROM partitions p GROUP BY p.queue_id) pc ON pc.queue_id = q.id
        WHERE p_search IS NULL
           OR position(lower(p_search) IN lower(CASE WHEN p_by_task THEN q.task ELSE q.namespace END)) > 0
        GROUP BY 1
    )
    SELECT l.label, l.queues, l.partitions, coalesce(s.total, 0), coalesce(s.pending, 0)
    FROM labels l
    LEFT JOIN stats s ON s.scope = CASE WHEN p_by_task THEN 'task' ELSE 'namespace' END AND s.key = l.label
    ORDER BY
        CASE WHEN p_sort = 'name' AND NOT p_desc THEN l.label END,
        CASE WHEN p_sort = 'name' AND p_desc THEN l.label END DESC,
        CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'queues' THEN l.queues WHEN 'pending' THEN coalesce(s.pending, 0) END END,
        CASE WHEN p_desc THEN CASE p_sort WHEN 'queues' THEN l.queues WHEN 'pending' THEN coalesce(s.pending, 0) END END DESC,
        l.label
    LIMIT p_limit OFFSET p_offset;
$$;
