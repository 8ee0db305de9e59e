-- DLQ listing (docs/api/admin-api.md §3) and trace records (docs/api/admin-api.md §4). Each paged listing has a
-- companion count, sent with it in one batch.

-- DLQ entries matching every given filter (NULL = any). p_error is the exact reason.
CREATE OR REPLACE FUNCTION qg_dlq_matching(p_queue text, p_group text, p_partition text,
    p_error text, p_from timestamptz, p_to timestamptz)
RETURNS SETOF dlq LANGUAGE sql STABLE AS $$
    SELECT d.* FROM dlq d
    WHERE (p_queue IS NULL OR d.queue_id = (SELECT q.id FROM queues q WHERE q.name = p_queue))
      AND qg_sees_queue(d.queue_id)
      AND (p_group IS NULL OR d.consumer_group = p_group)
      AND (p_partition IS NULL OR d.partition_name = p_partition)
      AND (p_error IS NULL OR d.error_message = p_error)
      AND (p_from IS NULL OR d.failed_at >= p_from)
      AND (p_to IS NULL OR d.failed_at <= p_to);
$$;

-- A page of the matching DLQ entries, newest failedAt first (ties by entry id). message_stored
-- says whether the entry's message still exists (it can then be redelivered and opened).
CREATE OR REPLACE FUNCTION qg_list_dlq(p_queue text, p_group text, p_partition text, p_error text,
    p_from timestamptz, p_to timestamptz, p_limit integer, p_offset integer)
RETURNS TABLE (dlq_id text, message_id text, transaction_id text, partition_id text, queue_name text,
               partition_name text, consumer_group text, error_message text, retry_count integer,
               payload text, encrypted boolean, trace_id text, producer_sub text,
               created_at timestamptz, failed_at timestamptz, message_stored boolean)
LANGUAGE sql STABLE AS $$
    SELECT d.id::text, d.message_id::text, d.transaction_id, d.partition_id::text, d.queue_name, d.partition_name,
           d.consumer_group, d.error_message, d.retry_count, d.payload::text, d.encrypted, d.trace_id::text,
           d.producer_sub, d.created_at, d.failed_at,
           EXISTS (SELECT 1 FROM messages m
                   WHERE m.partition_id = d.partition_id AND m.transaction_id = d.transaction_id
                     AND m.id = d.message_id)
    FROM qg_dlq_matching(p_queue, p_group, p_partition, p_error, p_from, p_to) d
    ORDER BY d.failed_at DESC, d.id DESC
    LIMIT p_limit OFFSET p_offset;
$$;

-- Stores one trace record on a message, with its distinct names in the order given. Returns
-- false when the message does not exist (also when it is removed meanwhile).
CREATE OR REPLACE FUNCTION qg_add_trace(p_id uuid, p_pid uuid, p_key text, p_group text,
    p_event text, p_data text, p_worker text, p_names text[], p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_names text[];
BEGIN
    SELECT coalesce(array_agg(s.n ORDER BY s.o), '{}') INTO v_names
    FROM (SELECT u.n, min(u.o) AS o FROM unnest(p_names) WITH ORDINALITY AS u (n, o) GROUP BY u.n) s;
    INSERT INTO traces (id, partition_id, transaction_id, consumer_group, event_type, data, worker_id,
                        trace_names, created_at)
    SELECT p_id, m.partition_id, m.transaction_id, p_group, p_event, p_data::json, p_worker, v_names, v_now
    FROM messages m WHERE m.partition_id = p_pid AND m.transaction_id = p_key AND qg_sees_partition(p_pid);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO trace_names (trace_id, trace_name, partition_id, transaction_id, created_at)
    SELECT p_id, n, p_pid, p_key, v_now FROM unnest(v_names) AS n;
    RETURN true;
EXCEPTION WHEN foreign_key_violation THEN
    RETURN false;
END $$;

-- The trace records of one message, oldest first.
CREATE OR REPLACE FUNCTION qg_message_traces(p_pid uuid, p_key text)
RETURNS TABLE (id text, event_type text, data text, consumer_group text, worker_id text,
               created_at timestamptz, trace_names text[])
LANGUAGE sql STABLE AS $$
    SELECT t.id::text, t.event_type, t.data::text, t.consumer_group, t.worker_id, t.created_at, t.trace_names
    FROM traces t
    WHERE t.partition_id = p_pid AND t.transaction_id = p_key AND qg_sees_partition(p_pid)
    ORDER BY t.created_at, t.id;
$$;

-- The trace records carrying one name, oldest first, with their message's payload (NULL when
-- the message is gone) and where it lives.
CREATE OR REPLACE FUNCTION qg_traces_by_name(p_name text, p_limit integer, p_offset integer)
RETURNS TABLE (id text, transaction_id text, partition_id text, event_type text, data text,
               consumer_group text, worker_id text, created_at timestamptz, queue_name text,
               partition_name text, payload text, encrypted boolean, trace_names text[])
LANGUAGE sql STABLE AS $$
    SELECT t.id::text, t.transaction_id, t.partition_id::text, t.event_type, t.data::text,
           t.consumer_group, t.worker_id, t.created_at, q.name, p.name, m.payload::text,
           coalesce(m.encrypted, false), t.trace_names
    FROM trace_names n
    JOIN traces t ON t.id = n.trace_id
    LEFT JOIN partitions p ON p.id = t.partition_id
    LEFT JOIN queues q ON q.id = p.queue_id
    LEFT JOIN messages m ON m.partition_id = t.partition_id AND m.transaction_id = t.transaction_id
    WHERE n.trace_name = p_name AND (qg_scope_all() OR q.id IS NOT NULL)
    ORDER BY n.created_at, n.trace_id
    LIMIT p_limit OFFSET p_offset;
$$;

-- How many trace records carry one name.
CREATE OR REPLACE FUNCTION qg_trace_name_count(p_name text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM trace_names n WHERE n.trace_name = p_name AND (qg_scope_all() OR qg_sees_partition(n.partition_id));
$$;

-- Every trace name with its record and message counts, most recently seen first.
CREATE OR REPLACE FUNCTION qg_trace_names(p_search text, p_limit integer, p_offset integer)
RETURNS TABLE (trace_name text, trace_count bigint, message_count bigint, last_seen timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT n.trace_name, count(*), count(DISTINCT (n.partition_id, n.transaction_id)), max(n.created_at)
    FROM trace_names n
    WHERE (p_search IS NULL OR position(lower(p_search) IN lower(n.trace_name)) > 0)
      AND (qg_scope_all() OR qg_sees_partition(n.partition_id))
    GROUP BY n.trace_name
    ORDER BY max(n.created_at) DESC, n.trace_name
    LIMIT p_limit OFFSET p_offset;
$$;

-- How many distinct trace names match p_search (a literal, case-insensitive substring of the
-- name, docs/api/admin-api.md §4.2, dashboard M11; NULL = all).
CREATE OR REPLACE FUNCTION qg_trace_name_total(p_search text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(DISTINCT n.trace_name) FROM trace_names n
    WHERE (p_search IS NULL OR position(lower(p_search) IN lower(n.trace_name)) > 0)
      AND (qg_scope_all() OR qg_sees_partition(n.partition_id));
$$;
