-- Streams (docs/api/streams.md): registrations, the atomic cycle and shard reads. Error codes
-- raised here (texts and HTTP statuses live in Go, internal/mq/streams.go):
--   QG010 query not found (404), QG011 partition not found (404),
--   QG012 ack at or below the cursor (rollback "Message already committed"),
--   QG003 a sink queue would exceed maxSize (rollback, DETAIL [queue]),
--   QG004 / QG005 / QG006 the ack verdicts of qg_ack_items (rollbacks).

-- POST /streams/v1/queries (docs/api/streams.md §3). Registrations of one name serialise on the
-- (tenant, name) unique index and the row lock: a concurrent first registration waits for the
-- other's insert and then compares hashes, so a mismatch is never lost. Returns the stored
-- query_id and the outcome: fresh | same | reset | mismatch.
CREATE OR REPLACE FUNCTION qg_stream_register(
    p_tenant text, p_name text, p_source text, p_sink text, p_hash text, p_reset boolean,
    p_id uuid, p_now timestamptz)
RETURNS TABLE (query_id uuid, outcome text) LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_q   stream_queries%ROWTYPE;
BEGIN
    LOOP
        INSERT INTO stream_queries (id, tenant, name, source_queue, sink_queue, config_hash, created_at, updated_at)
        VALUES (p_id, p_tenant, p_name, p_source, p_sink, p_hash, v_now, v_now)
        ON CONFLICT (tenant, name) DO NOTHING;
        IF FOUND THEN
            RETURN QUERY SELECT p_id, 'fresh'::text;
            RETURN;
        END IF;
        SELECT * INTO v_q FROM stream_queries q WHERE q.tenant = p_tenant AND q.name = p_name FOR UPDATE;
        EXIT WHEN FOUND; -- else deleted in between: insert again
    END LOOP;
    IF v_q.config_hash = p_hash THEN
        UPDATE stream_queries q SET source_queue = p_source, sink_queue = p_sink, updated_at = v_now
        WHERE q.id = v_q.id;
        RETURN QUERY SELECT v_q.id, 'same'::text;
    ELSIF p_reset THEN
        -- The registration is held (FOR UPDATE): no cycle of the query runs meanwhile.
        DELETE FROM stream_shards s WHERE s.query_id = v_q.id;
        UPDATE stream_queries q SET source_queue = p_source, sink_queue = p_sink, config_hash = p_hash,
                                    updated_at = v_now
        WHERE q.id = v_q.id;
        RETURN QUERY SELECT v_q.id, 'reset'::text;
    ELSE
        RETURN QUERY SELECT v_q.id, 'mismatch'::text;
    END IF;
END $$;

-- One row of a cycle's answer: kind 'cycle' (queue_name = the source queue, n = state ops
-- applied), 'ack' (n = messages consumed, released, dlq) or 'push' (one per push item).
CREATE TYPE qg_cycle_row AS (
    kind         text,
    i            integer,
    status       text,
    message_id   uuid,
    partition_id uuid,
    queue_name   text,
    n            bigint,
    released     boolean,
    dlq          boolean
);

-- The argument of qg_stream_cycle, passed as one JSON object whose keys are these fields' names
-- (jsonb_populate_record reads them by name; TestJSONCallsMatchTheirTypes checks the Go side's
-- keys against this list): the shard, the state ops (op_types .. op_values, one element per
-- op), the sink pushes (queues .. traces, one per push, and their producer sub), the source ack
-- (ack_key .. release; ack_key null: no ack), then the call's clock (null: now()).
CREATE TYPE qg_cycle_call AS (
    query_id       uuid,
    partition_id   uuid,
    consumer_group text,
    tenant         text,
    op_types       text[],
    op_keys        text[],
    op_values      text[],
    queues         text[],
    partitions     text[],
    keys           text[],
    ids            uuid[],
    payloads       text[],
    encrypted      boolean[],
    traces         uuid[],
    sub            text,
    ack_key        text,
    ack_lease      uuid,
    ack_status     text,
    ack_error      text,
    release        boolean,
    now            timestamptz
);

-- POST /streams/v1/cycle (docs/api/streams.md §4.2): state ops, sink pushes and the source ack in
-- one transaction. Locks, in the order every path that takes several of them uses: the
-- registration (shared), capped sink queues (as a push does), the partitions in ascending id
-- (sinks as writers, the source KEY SHARE unless it is also a sink), the consumer row of
-- (partition, group) when there is an ack, the shard. Any rejection raises: nothing is left.
--
-- The pushes go through qg_push_items and the ack through qg_ack_items, the data path's own
-- code; the cycle adds only its stricter ack rules (an ack at or below the cursor rejects, a
-- failure dead-letters, release_lease) and the state ops. Rule (b) of docs/api/streams.md §4.3
-- is qg_ack_items' "already committed" verdict, which already leaves out the messages of the
-- pair's requeue batch (docs/api/concepts.md §8.2), so those acks are applied with the
-- requeue readings. p_statuses: completed | dlq (the Go
-- side maps success and failed). Sink partitions must exist: missing ones raise QG001 before
-- anything is written, and the caller creates them in a committed step and calls again.
CREATE OR REPLACE FUNCTION qg_stream_cycle(p_call jsonb)
RETURNS SETOF qg_cycle_row LANGUAGE plpgsql AS $$
DECLARE
    -- The call's fields, read by name (see qg_cycle_call) into the names the body uses.
    v_call qg_cycle_call := jsonb_populate_record(NULL::qg_cycle_call, p_call);
    p_query_id uuid := v_call.query_id;
    p_partition_id uuid := v_call.partition_id;
    p_group text := v_call.consumer_group;
    p_tenant text := v_call.tenant;
    p_op_types text[] := v_call.op_types;
    p_op_keys text[] := v_call.op_keys;
    p_op_values text[] := v_call.op_values;
    p_queues text[] := v_call.queues;
    p_partitions text[] := v_call.partitions;
    p_keys text[] := v_call.keys;
    p_ids uuid[] := v_call.ids;
    p_payloads text[] := v_call.payloads;
    p_encrypted boolean[] := v_call.encrypted;
    p_traces uuid[] := v_call.traces;
    p_sub text := v_call.sub;
    p_ack_key text := v_call.ack_key;
    p_ack_lease uuid := v_call.ack_lease;
    p_ack_status text := v_call.ack_status;
    p_ack_error text := v_call.ack_error;
    p_release boolean := v_call.release;
    p_now timestamptz := v_call.now;
    v_source  text;
    v_pids    uuid[] := '{}';
    v_lock    record;
    v_push    qg_push_plan[] := '{}';
    v_bad     qg_push_plan;
    v_ack     qg_ack_result;
    v_cursor0 bigint;
    v_cursor1 bigint;
    v_live    boolean;
    v_rqb     boolean;   -- the pair still holds a requeue batch after the ack
    v_now     timestamptz;
BEGIN
    PERFORM 1 FROM stream_queries q WHERE q.id = p_query_id AND q.tenant = p_tenant FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'QG010', MESSAGE = 'QG010';
    END IF;
    SELECT q.name INTO v_source FROM partitions p JOIN queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'QG011', MESSAGE = 'QG011';
    END IF;
    IF cardinality(p_ids) > 0 THEN
        v_pids := qg_partition_ids(p_queues, p_partitions);
        IF array_position(v_pids, NULL) IS NOT NULL THEN
            PERFORM qg_raise_missing_partitions();
        END IF;
        -- Capped queues before partitions, as qg_push_items takes them.
        PERFORM 1 FROM queues q
        WHERE q.max_size > 0 AND q.id IN (SELECT p.queue_id FROM partitions p WHERE p.id = ANY (v_pids))
        ORDER BY q.id FOR NO KEY UPDATE;
    END IF;
    -- The partitions in ascending id, one at a time so the modes can differ. KEY SHARE on the
    -- source keeps a queue deletion wholly before or after the cycle without blocking pushes.
    FOR v_lock IN SELECT DISTINCT u.id, u.id = ANY (v_pids) AS sink
                  FROM unnest(array_append(v_pids, p_partition_id)) AS u (id) ORDER BY u.id LOOP
        IF v_lock.sink THEN
            PERFORM 1 FROM partitions p WHERE p.id = v_lock.id FOR NO KEY UPDATE;
        ELSE
            PERFORM 1 FROM partitions p WHERE p.id = v_lock.id FOR KEY SHARE;
        END IF;
        IF NOT FOUND THEN
            IF v_lock.id = p_partition_id THEN
                RAISE EXCEPTION USING ERRCODE = 'QG011', MESSAGE = 'QG011';
            END IF;
            PERFORM qg_raise_missing_partitions(); -- a sink deleted meanwhile: create it again
        END IF;
    END LOOP;
    v_now := coalesce(p_now, clock_timestamp());

    -- The ack (docs/api/streams.md §4.3), under the pair's consumer row lock.
    IF p_ack_key IS NOT NULL THEN
        SELECT c.cursor INTO v_cursor0 FROM consumers c
        WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group FOR UPDATE;
        SELECT * INTO v_ack
        FROM qg_ack_items(ARRAY[p_partition_id], ARRAY[p_ack_key], ARRAY[p_group], ARRAY[p_ack_status],
                          ARRAY[p_ack_lease], ARRAY[p_ack_error], NULL, v_now);
        IF NOT v_ack.success THEN
            RAISE EXCEPTION USING ERRCODE = v_ack.error, MESSAGE = v_ack.error;
        END IF;
        IF v_ack.already_committed THEN
            RAISE EXCEPTION USING ERRCODE = 'QG012', MESSAGE = 'QG012';
        END IF;
        SELECT c.cursor, c.lease_id IS NOT NULL AND c.lease_expires_at > v_now,
               coalesce(c.batch_end <= c.cursor, false) AND qg_requeue_batch(c.partition_id, c.consumer_group)
        INTO v_cursor1, v_live, v_rqb
        FROM consumers c WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group;
        IF p_release AND v_live THEN
            -- release_lease: the rest of the batch is deliverable at once, retry counter unchanged.
            -- A requeue batch's rest stays in the requeued set, out of any batch, and the pair is
            -- listed by what it serves next: the set (docs/api/concepts.md §9.3).
            UPDATE consumers c SET lease_id = NULL, lease_expires_at = NULL, batch_end = NULL
            WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group;
            IF v_rqb THEN
                UPDATE requeued r SET in_batch = false
                WHERE r.partition_id = p_partition_id AND r.consumer_group = p_group AND r.in_batch;
                PERFORM qg_requeue_rework(p_partition_id, p_group);
            ELSE
                PERFORM qg_ack_rework(ARRAY[p_partition_id], ARRAY[p_group], ARRAY[v_cursor1]);
            END IF;
            v_live := false;
        END IF;
    END IF;

    -- The shard, exclusively: cycles of one shard run one at a time.
    INSERT INTO stream_shards (query_id, partition_id) VALUES (p_query_id, p_partition_id)
    ON CONFLICT DO NOTHING;
    PERFORM 1 FROM stream_shards s
    WHERE s.query_id = p_query_id AND s.partition_id = p_partition_id FOR NO KEY UPDATE;

    IF cardinality(p_ids) > 0 THEN
        SELECT array_agg(x ORDER BY x.i) INTO v_push
        FROM qg_push_items(v_pids, p_keys, p_ids, p_payloads, p_encrypted, p_traces,
                           array_fill(p_sub, ARRAY[cardinality(p_ids)]), p_now, false) x;
        SELECT * INTO v_bad FROM unnest(v_push) x WHERE x.status = 'failed' ORDER BY x.i LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'QG003', MESSAGE = 'QG003',
                DETAIL = json_build_array(v_bad.qname)::text;
        END IF;
    END IF;

    -- State ops in array order: the last op on a key decides it.
    IF cardinality(p_op_keys) > 0 THEN
        WITH last AS MATERIALIZED (
            SELECT DISTINCT ON (u.k) u.t, u.k, u.v
            FROM unnest(p_op_types, p_op_keys, p_op_values) WITH ORDINALITY AS u (t, k, v, ord)
            ORDER BY u.k, u.ord DESC
        ), gone AS (
            DELETE FROM stream_state s USING last l
            WHERE l.t = 'delete' AND s.query_id = p_query_id AND s.partition_id = p_partition_id AND s.key = l.k
        )
        INSERT INTO stream_state (query_id, partition_id, key, value, updated_at)
        SELECT p_query_id, p_partition_id, l.k, l.v::json, v_now FROM last l WHERE l.t = 'upsert'
        ORDER BY l.k
        ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at;
    END IF;

    RETURN QUERY SELECT 'cycle'::text, 0, NULL::text, NULL::uuid, p_partition_id, v_source,
                        coalesce(cardinality(p_op_keys), 0)::bigint, false, false;
    IF p_ack_key IS NOT NULL THEN
        RETURN QUERY SELECT 'ack'::text, 0, NULL::text, NULL::uuid, p_partition_id, v_source,
                            v_cursor1 - coalesce(v_cursor0, 0), NOT v_live, v_ack.dlq;
    END IF;
    RETURN QUERY SELECT 'push'::text, x.i, CASE x.status WHEN 'taken' THEN 'duplicate' ELSE x.status END,
                        x.mid, x.pid, x.qname, 0::bigint, false, false
                 FROM unnest(v_push) x ORDER BY x.i;
END $$;

-- POST /streams/v1/state/get (docs/api/streams.md §5): one shard's rows in code-point key
-- order, filtered by keys, a literal prefix and a ripeness bound; takes no locks. Raises QG010
-- for an unknown query.
CREATE OR REPLACE FUNCTION qg_stream_state(
    p_query_id uuid, p_partition_id uuid, p_tenant text, p_keys text[], p_prefix text, p_ripe numeric)
RETURNS TABLE (key text, value text, updated_at timestamptz) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM stream_queries q WHERE q.id = p_query_id AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'QG010', MESSAGE = 'QG010';
    END IF;
    RETURN QUERY
        SELECT s.key, s.value::text, s.updated_at FROM stream_state s
        WHERE s.query_id = p_query_id AND s.partition_id = p_partition_id
          AND (p_keys IS NULL OR s.key = ANY (p_keys))
          AND (p_prefix IS NULL OR starts_with(s.key, p_prefix))
          AND (p_ripe IS NULL OR (json_typeof(s.value) = 'object' AND json_typeof(s.value -> 'windowEnd') = 'number'
                                  AND (s.value ->> 'windowEnd')::numeric <= p_ripe))
        ORDER BY s.key COLLATE "C";
END $$;

-- GET /streams/v1/queries (docs/api/streams.md §6): the tenant's registrations by name.
CREATE OR REPLACE FUNCTION qg_stream_queries(p_tenant text)
RETURNS TABLE (query_id uuid, name text, source_queue text, sink_queue text, config_hash text,
               state_rows bigint, created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT q.id, q.name, q.source_queue, q.sink_queue, q.config_hash,
           (SELECT count(*) FROM stream_state s WHERE s.query_id = q.id), q.created_at, q.updated_at
    FROM stream_queries q WHERE q.tenant = p_tenant
    ORDER BY q.name COLLATE "C";
$$;

-- DELETE /streams/v1/queries/:name (docs/api/streams.md §6): the registration and its state rows
-- in one transaction; the consumer group stays. NULL when the name is unknown.
CREATE OR REPLACE FUNCTION qg_stream_delete(p_tenant text, p_name text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_n  bigint;
BEGIN
    SELECT q.id INTO v_id FROM stream_queries q WHERE q.tenant = p_tenant AND q.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM stream_state s WHERE s.query_id = v_id;
    DELETE FROM stream_queries q WHERE q.id = v_id; -- shards and rows cascade
    RETURN v_n;
END $$;
