-- The system overview, GET /api/v1/resources/overview (docs/api/admin-api.md §1).
-- Which queues, partitions, namespaces and tasks exist is read live; the message counters, the
-- DLQ entries and the lag come from the stats job's system row (zeros until its first run),
-- as "Freshness" in docs/api/admin-api.md allows, so a request at 10,000 queues costs a count
-- of the queues and partitions, not qg_partition_counts and qg_pair_lag over every partition
-- and pair (that took seconds; docs/decisions.md). The messages written in the 60 s before the
-- run (the ingest throughput) are the stats job's too: counted per request they walked every
-- partition written in that minute.

-- The former live version returned no stats_at; its return type cannot be replaced in place.
DROP FUNCTION IF EXISTS qg_overview(timestamptz);

CREATE OR REPLACE FUNCTION qg_system_overview(p_now timestamptz)
RETURNS TABLE (queues bigint, partitions bigint, namespaces bigint, tasks bigint,
               total bigint, unconsumed bigint, processing bigint, dead_letter bigint,
               time_avg float8, time_median float8, time_min bigint, time_max bigint,
               offset_avg float8, offset_median float8, offset_min bigint, offset_max bigint,
               ingested_last_minute bigint, stats_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT count(*) AS queues, count(DISTINCT q.namespace) AS namespaces,
               count(DISTINCT q.task) AS tasks
        FROM queues q
    ), sys AS (
        SELECT s.total, s.pending, s.processing, s.dead_letter, s.lag, s.ingested_last_minute, s.computed_at
        FROM stats s WHERE s.scope = 'system'
        ORDER BY s.computed_at DESC LIMIT 1
    )
    SELECT q.queues, (SELECT count(*) FROM partitions),  q.namespaces, q.tasks,
           coalesce(sys.total, 0)::bigint, coalesce(sys.pending + sys.processing, 0)::bigint,
           coalesce(sys.processing, 0)::bigint, coalesce(sys.dead_letter, 0)::bigint,
           coalesce((sys.lag #>> '{time,avg}')::float8, 0), coalesce((sys.lag #>> '{time,median}')::float8, 0),
           coalesce((sys.lag #>> '{time,min}')::bigint, 0), coalesce((sys.lag #>> '{time,max}')::bigint, 0),
           coalesce((sys.lag #>> '{offset,avg}')::float8, 0), coalesce((sys.lag #>> '{offset,median}')::float8, 0),
           coalesce((sys.lag #>> '{offset,min}')::bigint, 0), coalesce((sys.lag #>> '{offset,max}')::bigint, 0),
           coalesce(sys.ingested_last_minute, 0)::bigint, sys.computed_at
    FROM q LEFT JOIN sys ON true;
$$;
