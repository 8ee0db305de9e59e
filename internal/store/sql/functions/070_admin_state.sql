-- Live state shared by the admin read functions (docs/api/admin-api.md, docs/api/concepts.md §10). Every counter
-- is computed from the messages and consumers tables with index range scans per partition;
-- the stats job may later serve the same numbers from its own tables behind these signatures.
-- p_now NULL means the database clock.

-- Expiry of the latest live lease whose batch holds the message at p_pos, NULL when none: the
-- message is then not processing. A batch spans its holder's skip marks without delivering
-- them: a marked message is consumed by that holder (docs/api/concepts.md §10). A requeue
-- batch holds the requeued messages it delivered (docs/api/concepts.md §9.3), at or below the
-- cursor.
CREATE OR REPLACE FUNCTION qg_message_lease(p_pid uuid, p_pos bigint, p_now timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT max(c.lease_expires_at) FROM consumers c
    WHERE c.partition_id = p_pid AND c.lease_expires_at > coalesce(p_now, now())
      AND ((c.cursor < p_pos AND p_pos <= c.batch_end
            AND NOT EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_pid
                              AND k.consumer_group = c.consumer_group AND k.position = p_pos))
           OR (p_pos <= c.cursor AND EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid
                 AND r.consumer_group = c.consumer_group AND r.position = p_pos AND r.in_batch)));
$$;

-- Counters of one partition: stored messages, unconsumed ones (after the slowest consumer's
-- cursor, all of them while the partition has no consumer, less those every consumer behind
-- them skips: docs/api/concepts.md §10), the unconsumed ones that lie in a
-- live leased batch of a consumer that has not consumed them (processing), DLQ entries, and
-- the createdAt of the first and last stored message.
CREATE OR REPLACE FUNCTION qg_partition_counts(p_pid uuid, p_now timestamptz)
RETURNS TABLE (total bigint, unconsumed bigint, processing bigint, dead_letter bigint,
               oldest_at timestamptz, newest_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH c AS (
        SELECT coalesce(min(c.cursor), 0) AS min_cursor,
               min(c.cursor) FILTER (WHERE c.lease_expires_at > coalesce(p_now, now())) AS lo,
               max(c.batch_end) FILTER (WHERE c.lease_expires_at > coalesce(p_now, now())) AS hi
        FROM consumers c WHERE c.partition_id = p_pid
    )
    -- Requeued messages (docs/api/concepts.md §9.3) are unconsumed, and processing while a live
    -- requeue batch holds them, at or below the cursors.
    SELECT (SELECT count(*) FROM messages m WHERE m.partition_id = p_pid),
           (SELECT count(*) FROM messages m WHERE m.partition_id = p_pid AND m.position > c.min_cursor)
             - qg_skipped_by_all(p_pid, c.min_cursor)
           + (SELECT count(DISTINCT r.position) FROM requeued r WHERE r.partition_id = p_pid AND r.position <= c.min_cursor),
           (SELECT count(*) FROM (
                SELECT m.position FROM messages m
                WHERE m.partition_id = p_pid AND m.position > c.lo AND m.position <= c.hi
                  AND qg_message_lease(p_pid, m.position, p_now) IS NOT NULL
                UNION
                SELECT r.position FROM requeued r
                WHERE r.partition_id = p_pid AND r.in_batch AND qg_message_lease(p_pid, r.position, p_now) IS NOT NULL) x),
           (SELECT count(*) FROM dlq d WHERE d.partition_id = p_pid),
           (SELECT m.created_at FROM messages m WHERE m.partition_id = p_pid ORDER BY m.position LIMIT 1),
           (SELECT m.created_at FROM messages m WHERE m.partition_id = p_pid ORDER BY m.position DESC LIMIT 1)
    FROM c;
$$;

-- State of a stored message (docs/api/admin-api.md §2.1): dead_letter when it has a DLQ entry, else
-- completed when the partition has consumers and all passed it or skip it (docs/api/concepts.md
-- §10), processing when a live batch holds it, else pending. With p_group set, the same for that one group, NULL when the group
-- is not a consumer of the partition.
CREATE OR REPLACE FUNCTION qg_message_status(p_pid uuid, p_pos bigint, p_mid uuid, p_group text,
    p_now timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    WITH c AS (
        -- a message in a group's requeued set is not consumed by it (docs/api/concepts.md §10)
        SELECT count(*) AS n, count(*) FILTER (WHERE (c.cursor < p_pos AND NOT c.skips) OR c.requeued) AS behind,
               count(*) FILTER (WHERE c.lease_expires_at > coalesce(p_now, now())
                                  AND ((c.cursor < p_pos AND NOT c.skips AND p_pos <= c.batch_end)
                                       OR (c.requeued AND EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid
                                             AND r.consumer_group = c.consumer_group AND r.position = p_pos
                                             AND r.in_batch)))) AS leased
        FROM (SELECT c.*, EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_pid
                                    AND k.consumer_group = c.consumer_group AND k.position = p_pos) AS skips,
                     EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_pid
                               AND r.consumer_group = c.consumer_group AND r.position = p_pos) AS requeued
              FROM consumers c
              WHERE c.partition_id = p_pid AND (p_group IS NULL OR c.consumer_group = p_group)) c
    )
    SELECT CASE
        WHEN p_group IS NOT NULL AND c.n = 0 THEN NULL
        WHEN EXISTS (SELECT 1 FROM dlq d WHERE d.partition_id = p_pid AND d.message_id = p_mid
                       AND (p_group IS NULL OR d.consumer_group = p_group)) THEN 'dead_letter'
        WHEN c.n > 0 AND c.behind = 0 THEN 'completed'
        WHEN c.leased > 0 THEN 'processing'
        ELSE 'pending'
    END
    FROM c;
$$;

-- Age in whole seconds at p_now (NULL: the database clock) of the oldest unconsumed message,
-- created at p_oldest; 0 when there is none (NULL).
CREATE OR REPLACE FUNCTION qg_lag_age(p_oldest timestamptz, p_now timestamptz)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT coalesce(greatest(floor(extract(epoch FROM coalesce(p_now, now()) - p_oldest)), 0), 0)::bigint;
$$;

-- Lag of one (partition, consumer) pair: messages after its cursor that it does not skip
-- (a skip mark makes a message consumed for its group, docs/api/concepts.md §10), createdAt of
-- the first of them, and that message's age in whole seconds (0 when nothing is unconsumed).
-- Every mark names a stored message (foreign key), so the marks after the cursor are
-- subtracted rather than probed per message.
CREATE OR REPLACE FUNCTION qg_pair_lag(p_pid uuid, p_group text, p_cursor bigint, p_now timestamptz)
RETURNS TABLE (offset_lag bigint, oldest_at timestamptz, time_lag bigint)
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM messages m WHERE m.partition_id = p_pid AND m.position > p_cursor)
             - (SELECT count(*) FROM skip_marks k WHERE k.partition_id = p_pid
                  AND k.consumer_group = p_group AND k.position > p_cursor),
           o.created_at, qg_lag_age(o.created_at, p_now)
    FROM (SELECT (SELECT m.created_at FROM messages m
                  WHERE m.partition_id = p_pid AND m.position > p_cursor
                    AND NOT EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_pid
                                      AND k.consumer_group = p_group AND k.position = m.position)
                  ORDER BY m.position LIMIT 1) AS created_at) o;
$$;
