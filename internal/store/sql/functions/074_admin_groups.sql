-- Consumer groups (docs/api/admin-api.md §7): listings, deletion, subscription rewrite and seeks. Every
-- write locks consumer rows in ascending (partition id, group) order, the order of every write
-- path, and NOTIFYs the queues it touched so parked pops look again.

-- One row per (group, queue) known from cursors or registrations, queue mode included, matching
-- every given filter (NULL = any): p_queue and p_group exact, p_search a literal,
-- case-insensitive substring of the group name, p_state one of Stable, Lagging, Dead
-- (docs/api/admin-api.md §7; dashboard M8). The filters on names apply before any lag is
-- computed. state: Lagging above 300 s of time lag, else Stable if the group ever consumed on the
-- queue, else Dead. p_sort is one of name (group, then queue), queue, members, totalLag,
-- maxTimeLag (checked by the caller); every order ends with group and queue.
CREATE OR REPLACE FUNCTION qg_consumer_groups(p_queue text, p_group text, p_search text, p_state text,
    p_sort text, p_desc boolean, p_limit integer, p_offset integer, p_now timestamptz)
RETURNS TABLE (consumer_group text, queue_name text, members bigint, partitions_with_lag bigint,
               total_lag bigint, max_time_lag bigint, ever_consumed boolean, state text, subscription_mode text,
               subscription_timestamp timestamptz, subscription_created_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH qs AS (
        SELECT q.id, q.name FROM queues q WHERE p_queue IS NULL OR q.name = p_queue
    ), groups AS (
        SELECT c.consumer_group, c.queue_id FROM consumers c
        WHERE c.queue_id IN (SELECT qs.id FROM qs) AND (p_group IS NULL OR c.consumer_group = p_group)
          AND (p_search IS NULL OR position(lower(p_search) IN lower(c.consumer_group)) > 0)
        UNION
        SELECT s.consumer_group, s.queue_id FROM subscriptions s
        WHERE s.queue_id IN (SELECT qs.id FROM qs) AND (p_group IS NULL OR s.consumer_group = p_group)
          AND (p_search IS NULL OR position(lower(p_search) IN lower(s.consumer_group)) > 0)
    ), pairs AS (
        -- Members and whether they ever consumed are live; the lag is the stats job's (see
        -- qg_lagging_pairs), summed per (group, queue) from its table.
        SELECT c.consumer_group, c.queue_id, count(*) AS members,
               bool_or(c.last_consumed_at IS NOT NULL) AS ever_consumed
        FROM groups g
        JOIN consumers c ON c.consumer_group = g.consumer_group AND c.queue_id = g.queue_id
        GROUP BY c.consumer_group, c.queue_id
    ), lag AS (
        SELECT sc.consumer_group, sc.queue_id, count(*) FILTER (WHERE sc.offset_lag > 0) AS partitions_with_lag,
               sum(sc.offset_lag) AS total_lag, qg_lag_age(min(sc.oldest_unconsumed_at), p_now) AS max_time_lag
        FROM groups g
        JOIN stats_consumers sc ON sc.consumer_group = g.consumer_group AND sc.queue_id = g.queue_id
        GROUP BY sc.consumer_group, sc.queue_id
    ), rows AS (
        SELECT g.consumer_group, q.name AS queue_name, coalesce(pr.members, 0) AS members,
               coalesce(l.partitions_with_lag, 0) AS partitions_with_lag,
               coalesce(l.total_lag, 0)::bigint AS total_lag, coalesce(l.max_time_lag, 0) AS max_time_lag,
               coalesce(pr.ever_consumed, false) AS ever_consumed,
               -- Queue mode registers too (as mode all), but has no subscription to report.
               CASE WHEN g.consumer_group <> '__QUEUE_MODE__' THEN s.mode END AS mode,
               CASE WHEN g.consumer_group <> '__QUEUE_MODE__' THEN s.subscription_timestamp END AS ts,
               CASE WHEN g.consumer_group <> '__QUEUE_MODE__' THEN s.created_at END AS created
        FROM groups g
        JOIN qs q ON q.id = g.queue_id
        LEFT JOIN pairs pr ON pr.consumer_group = g.consumer_group AND pr.queue_id = g.queue_id
        LEFT JOIN lag l ON l.consumer_group = g.consumer_group AND l.queue_id = g.queue_id
        LEFT JOIN subscriptions s ON s.queue_id = g.queue_id AND s.consumer_group = g.consumer_group
    ), states AS (
        SELECT r.*, CASE WHEN r.max_time_lag > 300 THEN 'Lagging' WHEN r.ever_consumed THEN 'Stable'
                         ELSE 'Dead' END AS state
        FROM rows r
    )
    SELECT x.consumer_group, x.queue_name, x.members, x.partitions_with_lag, x.total_lag, x.max_time_lag,
           x.ever_consumed, x.state, x.mode, x.ts, x.created
    FROM states x
    WHERE p_state IS NULL OR x.state = p_state
    ORDER BY
        CASE WHEN p_sort = 'name' AND NOT p_desc THEN x.consumer_group END,
        CASE WHEN p_sort = 'name' AND p_desc THEN x.consumer_group END DESC,
        CASE WHEN p_sort = 'queue' AND NOT p_desc THEN x.queue_name END,
        CASE WHEN p_sort = 'queue' AND p_desc THEN x.queue_name END DESC,
        CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'members' THEN x.members WHEN 'totalLag' THEN x.total_lag
            WHEN 'maxTimeLag' THEN x.max_time_lag END END,
        CASE WHEN p_desc THEN CASE p_sort WHEN 'members' THEN x.members WHEN 'totalLag' THEN x.total_lag
            WHEN 'maxTimeLag' THEN x.max_time_lag END END DESC,
        x.consumer_group, x.queue_name
    LIMIT p_limit OFFSET p_offset;
$$;

-- Every (partition, group) pair whose time lag is at least p_min_lag seconds, on p_queue and of
-- p_group when given. p_sort is one of timeLag, offsetLag, partition, group (checked by the
-- caller); ties by queue, partition, group. lease_id is the live lease, NULL when none.
--
-- The pairs and their lag are the stats job's (stats_consumers, docs/api/admin-api.md §7): the
-- offset lag and the oldest unconsumed message as of its last run over the partition, the time
-- lag that message's age now. Computing it here for every pair (qg_pair_lag) took seconds at
-- 30,000 pairs (docs/decisions.md). So the numbers are at most one stats run old
-- (STATS_INTERVAL_MS plus the run): a pair that consumed since shows its former lag, and a pair
-- created since shows from the next run on. Deleting a group, queue or partition removes its
-- rows at once. The page is ordered in that table alone; the live lease and last consumption
-- are read for its rows only.
CREATE OR REPLACE FUNCTION qg_lagging_pairs(p_min_lag bigint, p_queue text, p_group text, p_sort text,
    p_desc boolean, p_limit integer, p_offset integer, p_now timestamptz)
RETURNS TABLE (consumer_group text, queue_name text, partition_name text, partition_id text,
               lease_id text, offset_lag bigint, time_lag bigint, oldest_at timestamptz,
               last_consumed_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT pg.consumer_group, pg.queue_name, pg.partition_name, pg.partition_id::text,
           CASE WHEN c.lease_expires_at > coalesce(p_now, now()) THEN c.lease_id::text END,
           pg.offset_lag, pg.age, pg.oldest_unconsumed_at, c.last_consumed_at
    FROM (
        SELECT sc.partition_id, sc.consumer_group, sc.queue_name, sc.partition_name, sc.offset_lag,
               sc.oldest_unconsumed_at, l.age
        FROM stats_consumers sc
        CROSS JOIN LATERAL (SELECT qg_lag_age(sc.oldest_unconsumed_at, p_now) AS age) l
        WHERE l.age >= p_min_lag
          AND (p_queue IS NULL OR sc.queue_id = (SELECT q.id FROM queues q WHERE q.name = p_queue))
          AND (p_group IS NULL OR sc.consumer_group = p_group)
          AND qg_sees_queue(sc.queue_id)
        ORDER BY
            CASE WHEN p_sort = 'partition' AND NOT p_desc THEN sc.partition_name END,
            CASE WHEN p_sort = 'partition' AND p_desc THEN sc.partition_name END DESC,
            CASE WHEN p_sort = 'group' AND NOT p_desc THEN sc.consumer_group END,
            CASE WHEN p_sort = 'group' AND p_desc THEN sc.consumer_group END DESC,
            CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'timeLag' THEN l.age WHEN 'offsetLag' THEN sc.offset_lag END END,
            CASE WHEN p_desc THEN CASE p_sort WHEN 'timeLag' THEN l.age WHEN 'offsetLag' THEN sc.offset_lag END END DESC,
            sc.queue_name, sc.partition_name, sc.consumer_group
        LIMIT p_limit OFFSET p_offset) pg
    LEFT JOIN consumers c ON c.partition_id = pg.partition_id AND c.consumer_group = pg.consumer_group
    ORDER BY
        CASE WHEN p_sort = 'partition' AND NOT p_desc THEN pg.partition_name END,
        CASE WHEN p_sort = 'partition' AND p_desc THEN pg.partition_name END DESC,
        CASE WHEN p_sort = 'group' AND NOT p_desc THEN pg.consumer_group END,
        CASE WHEN p_sort = 'group' AND p_desc THEN pg.consumer_group END DESC,
        CASE WHEN NOT p_desc THEN CASE p_sort WHEN 'timeLag' THEN pg.age WHEN 'offsetLag' THEN pg.offset_lag END END,
        CASE WHEN p_desc THEN CASE p_sort WHEN 'timeLag' THEN pg.age WHEN 'offsetLag' THEN pg.offset_lag END END DESC,
        pg.queue_name, pg.partition_name, pg.consumer_group;
$$;

-- The cursors of one group on every queue (or on p_queue), by queue and partition name.
CREATE OR REPLACE FUNCTION qg_consumer_group_detail(p_group text, p_queue text, p_now timestamptz)
RETURNS TABLE (queue_name text, partition_name text, lease_id text, last_consumed_at timestamptz,
               total_consumed bigint, offset_lag bigint, time_lag bigint)
LANGUAGE sql STABLE AS $$
    SELECT q.name, p.name, CASE WHEN c.lease_expires_at > coalesce(p_now, now()) THEN c.lease_id::text END,
           c.last_consumed_at, c.messages_consumed, l.offset_lag, l.time_lag
    FROM consumers c
    JOIN partitions p ON p.id = c.partition_id
    JOIN queues q ON q.id = c.queue_id
    CROSS JOIN LATERAL qg_pair_lag(c.partition_id, c.consumer_group, c.cursor, p_now) l
    WHERE c.consumer_group = p_group AND (p_queue IS NULL OR q.name = p_queue)
    ORDER BY q.name, p.name;
$$;

-- Removes a group's consumer state (cursors, leases) on every queue, or on p_queue only, and
-- with p_metadata its registrations. DLQ entries stay. Returns the consumer rows removed and
-- the names of the queues touched.
CREATE OR REPLACE FUNCTION qg_delete_consumer_group(p_group text, p_queue text, p_metadata boolean,
    OUT deleted integer, OUT queue_names text[])
LANGUAGE plpgsql AS $$
DECLARE
    v_qid  uuid;
    v_qids uuid[];
BEGIN
    IF p_queue IS NOT NULL THEN
        SELECT q.id INTO v_qid FROM queues q WHERE q.name = p_queue;
        IF NOT FOUND THEN
            deleted := 0;
            queue_names := '{}';
            RETURN;
        END IF;
    END IF;
    PERFORM 1 FROM consumers c
    WHERE c.consumer_group = p_group AND (v_qid IS NULL OR c.queue_id = v_qid) AND qg_sees_queue(c.queue_id)
    ORDER BY c.partition_id FOR UPDATE;
    WITH d AS (DELETE FROM consumers c
               WHERE c.consumer_group = p_group AND (v_qid IS NULL OR c.queue_id = v_qid) AND qg_sees_queue(c.queue_id)
               RETURNING c.queue_id)
    SELECT count(*), array_agg(DISTINCT d.queue_id) INTO deleted, v_qids FROM d;
    -- The listings read the stats job's lag (qg_lagging_pairs): removed pairs leave it now.
    DELETE FROM stats_consumers sc
    WHERE sc.consumer_group = p_group AND (v_qid IS NULL OR sc.queue_id = v_qid) AND qg_sees_queue(sc.queue_id);
    IF p_metadata THEN
        WITH d AS (DELETE FROM subscriptions s
                   WHERE s.consumer_group = p_group AND (v_qid IS NULL OR s.queue_id = v_qid) AND qg_sees_queue(s.queue_id)
                   RETURNING s.queue_id)
        SELECT array_agg(DISTINCT x) INTO v_qids
        FROM (SELECT unnest(v_qids) UNION SELECT d.queue_id FROM d) AS u (x);
        -- Unregistered, the group has no work listed; a later pop registers it afresh.
        DELETE FROM partition_work w
        WHERE w.consumer_group = p_group AND (v_qid IS NULL OR w.queue_id = v_qid) AND qg_sees_queue(w.queue_id);
    ELSE
        -- Still registered, without cursors: it restarts by its subscription wherever
        -- messages are stored, so pops must find those partitions in the work index.
        PERFORM qg_track_work(array_agg(p.id), p_group) FROM partitions p WHERE p.queue_id = ANY (v_qids);
    END IF;
    PERFORM qg_notify_queue(x) FROM unnest(v_qids) AS x;
    queue_names := ARRAY(SELECT q.name FROM queues q WHERE q.id = ANY (v_qids) ORDER BY q.name);
END $$;

-- Rewrites a named group's subscription timestamp on every queue it is registered on (mode
-- becomes timestamp); it applies where the group has no cursor yet (docs/api/concepts.md §5.3).
CREATE OR REPLACE FUNCTION qg_set_subscription_timestamp(p_group text, p_ts timestamptz,
    OUT updated integer, OUT queue_names text[])
LANGUAGE plpgsql AS $$
DECLARE
    v_qids uuid[];
BEGIN
    -- Queue mode always reads from the first stored message; its registration stays as is.
    WITH u AS (UPDATE subscriptions s SET mode = 'timestamp', subscription_timestamp = p_ts
               WHERE s.consumer_group = p_group AND p_group <> '__QUEUE_MODE__' AND qg_sees_queue(s.queue_id) RETURNING s.queue_id)
    SELECT count(*), array_agg(u.queue_id) INTO updated, v_qids FROM u;
    PERFORM qg_notify_queue(x) FROM unnest(v_qids) AS x;
    queue_names := ARRAY(SELECT q.name FROM queues q WHERE q.id = ANY (v_qids) ORDER BY q.name);
END $$;

-- Places a group's cursor on one partition, creating it where missing, and clears its lease,
-- batch and retry state: a seek (docs/api/admin-api.md §7). The cursor may move backwards, so the pair
-- is listed in the work index again when messages lie after it (after the consumer row, the
-- order pops use).
CREATE OR REPLACE FUNCTION qg_place_cursor(p_pid uuid, p_group text, p_qid uuid, p_cursor bigint)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO consumers AS c (partition_id, consumer_group, queue_id, cursor)
    VALUES (p_pid, p_group, p_qid, p_cursor)
    ON CONFLICT (partition_id, consumer_group) DO UPDATE
    SET cursor = EXCLUDED.cursor, lease_id = NULL, lease_expires_at = NULL, batch_end = NULL,
        retry_count = 0, retry_not_before = NULL;
    -- A seek drops the pair's skip marks (docs/api/concepts.md §9.1): messages it moves back over
    -- are delivered again, the moved ones too.
    DELETE FROM skip_marks k WHERE k.partition_id = p_pid AND k.consumer_group = p_group;
    -- and its requeued set (docs/api/concepts.md §9.3): the cursor alone says what comes next.
    DELETE FROM requeued r WHERE r.partition_id = p_pid AND r.consumer_group = p_group;
    SELECT qg_track_work(ARRAY[p_pid], p_group);
$$;

-- Seeks a group on every partition of a queue: to the end (p_ts NULL) or to the first message
-- created at or after p_ts. Partitions are handled in ascending id order. Returns NULL when
-- the queue does not exist, else the partitions updated.
CREATE OR REPLACE FUNCTION qg_seek_queue(p_group text, p_queue text, p_ts timestamptz)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
    v_p   record;
    v_n   integer := 0;
BEGIN
    SELECT q.id INTO v_qid FROM queues q WHERE q.name = p_queue;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    FOR v_p IN SELECT p.id, h.last_position FROM partitions p JOIN partition_heads h ON h.partition_id = p.id
               WHERE p.queue_id = v_qid ORDER BY p.id LOOP
        PERFORM qg_place_cursor(v_p.id, p_group, v_qid, CASE WHEN p_ts IS NULL THEN v_p.last_position
            ELSE qg_initial_cursor(v_p.id, 'timestamp', p_ts, false) END);
        v_n := v_n + 1;
    END LOOP;
    PERFORM qg_notify_queue(v_qid);
    RETURN v_n;
END $$;

-- Seeks a group to the end of one partition. known is false when the queue or the partition
-- does not exist; moved_to is the last stored message, NULL when the partition is empty.
CREATE OR REPLACE FUNCTION qg_seek_partition(p_group text, p_queue text, p_partition text,
    OUT known boolean, OUT moved_to text)
LANGUAGE plpgsql AS $$
DECLARE
    v_p record;
BEGIN
    SELECT p.id, p.queue_id, h.last_position INTO v_p
    FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
    WHERE q.name = p_queue AND p.name = p_partition;
    known := FOUND;
    IF NOT known THEN
        RETURN;
    END IF;
    PERFORM qg_place_cursor(v_p.id, p_group, v_p.queue_id, v_p.last_position);
    SELECT m.id::text INTO moved_to FROM messages m
    WHERE m.partition_id = v_p.id AND m.position <= v_p.last_position
    ORDER BY m.position DESC LIMIT 1;
    PERFORM qg_notify_queue(v_p.queue_id);
END $$;
