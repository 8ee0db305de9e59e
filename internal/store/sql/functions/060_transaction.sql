-- One entry of a committed transaction (docs/api/transaction.md §6), by flattened index.
CREATE TYPE qg_txn_result AS (
    i                 integer,
    kind              text,     -- push | ack
    status            text,     -- push: queued | duplicate
    message_id        uuid,
    partition_id      uuid,
    queue_name        text,
    dlq               boolean,
    already_committed boolean,
    lease_released    boolean   -- ack: the pair holds no live lease afterwards
);

-- The arguments of qg_transaction, passed as one JSON object whose keys are these fields'
-- names (jsonb_populate_record reads them by name, so no argument depends on its position;
-- TestJSONCallsMatchTheirTypes checks the Go side's keys against this list): the flattened
-- pushes (push_idx .. traces, one element per push), the flattened acks (ack_idx .. ack_errors),
-- then the whole call's. JSON null is SQL NULL: pids NULL means "resolve the names".
CREATE TYPE qg_txn_call AS (
    push_idx     integer[],
    queues       text[],
    partitions   text[],
    keys         text[],
    ids          uuid[],
    payloads     text[],
    encrypted    boolean[],
    traces       uuid[],
    ack_idx      integer[],
    ack_pids     uuid[],
    ack_keys     text[],
    ack_groups   text[],
    ack_statuses text[],
    ack_leases   uuid[],
    ack_errors   text[],
    required     uuid[],
    sub          text,
    now          timestamptz,
    tenant       text,
    pids         uuid[]
);

-- POST /api/v1/transaction (docs/api/transaction.md §3): acks and pushes in one transaction, all or
-- nothing. Rollback causes are raised with their exact message and a QG00x code:
-- QG004 QTXN, QG002 QDUP, QG003 QFULL (from qg_push_items), QG005 QLEASE, QG006 QBATCH.
-- Missing queues and partitions raise QG001 before anything is written; the caller creates
-- them in their own committed step and calls again. p_tenant is the caller's tenant ('' until
-- tenancy lands): acks of another tenant's messages roll back as QTXN. p_pids are the pushes'
-- partition ids when the caller knows them all (its cache), else NULL: the names are resolved.
--
-- A pipeline stage's transaction (one completed ack, under its pair's live lease, of the end of
-- the leased batch) takes qg_ack_batch_end: the message is found once (step 6), and the lease
-- check is the settle UPDATE's WHERE. Any other ack, or that one failing its checks, takes
-- qg_ack_items after the pushes, as before, so the verdicts and their precedence are the same.
--
-- qg_transaction_run takes the call as its composite; qg_transaction_many runs it per request.
CREATE OR REPLACE FUNCTION qg_transaction_run(p_args qg_txn_call)
RETURNS SETOF qg_txn_result LANGUAGE plpgsql AS $$
DECLARE
    -- The call's fields, under the names the body uses.
    v_call qg_txn_call := p_args;
    p_push_idx integer[] := v_call.push_idx;
    p_queues text[] := v_call.queues;
    p_partitions text[] := v_call.partitions;
    p_keys text[] := v_call.keys;
    p_ids uuid[] := v_call.ids;
    p_payloads text[] := v_call.payloads;
    p_encrypted boolean[] := v_call.encrypted;
    p_traces uuid[] := v_call.traces;
    p_ack_idx integer[] := v_call.ack_idx;
    p_ack_pids uuid[] := v_call.ack_pids;
    p_ack_keys text[] := v_call.ack_keys;
    p_ack_groups text[] := v_call.ack_groups;
    p_ack_statuses text[] := v_call.ack_statuses;
    p_ack_leases uuid[] := v_call.ack_leases;
    p_ack_errors text[] := v_call.ack_errors;
    p_required uuid[] := v_call.required;
    p_sub text := v_call.sub;
    p_now timestamptz := v_call.now;
    p_tenant text := v_call.tenant;
    v_pids uuid[] := v_call.pids;
    v_push qg_push_plan[] := '{}';
    v_ack  qg_ack_result[] := '{}';
    v_bad  record;
    v_pos   bigint; -- a single completed ack: its message's position and queue
    v_qname text;
BEGIN
    -- Before anything reads messages: its pushes' open segment and every later read of
    -- messages see no rotation or all of one (qg_segment_open_lock, 093_segments.sql).
    PERFORM pg_advisory_xact_lock_shared(qg_job_lock_key('segment_open'));
    -- Step 6: every ack must name a stored message; checked before anything is created.
    -- A message of another tenant's queue counts as unknown, so nothing about it leaks
    -- (docs/api/concepts.md §14: reported exactly as QTXN).
    IF cardinality(p_ack_idx) = 1 AND p_ack_statuses[1] = 'completed' THEN
        SELECT m.position, q.name INTO v_pos, v_qname
        FROM messages m
        JOIN partitions p ON p.id = p_ack_pids[1]
        JOIN queues q ON q.id = p.queue_id
        WHERE m.partition_id = p_ack_pids[1] AND m.transaction_id = p_ack_keys[1] AND q.tenant = p_tenant;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'QG004', MESSAGE = 'QG004';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM unnest(p_ack_pids, p_ack_keys) AS a (pid, k)
               WHERE NOT EXISTS (SELECT 1 FROM messages m
                                 JOIN partitions p ON p.id = m.partition_id
                                 JOIN queues q ON q.id = p.queue_id
                                 WHERE m.partition_id = a.pid AND m.transaction_id = a.k
                                   AND q.tenant = p_tenant)) THEN
        RAISE EXCEPTION USING ERRCODE = 'QG004', MESSAGE = 'QG004';
    END IF;

    IF cardinality(p_ids) > 0 AND v_pids IS NULL THEN
        v_pids := qg_partition_ids(p_queues, p_partitions);
        IF array_position(v_pids, NULL) IS NOT NULL THEN
            PERFORM qg_raise_missing_partitions();
        END IF;
    END IF;
    IF cardinality(p_ids) > 0 THEN
        -- Steps 8-9: partitions locked in ascending order, then QDUP / QFULL.
        SELECT array_agg(x) INTO v_push
        FROM qg_push_items(v_pids, p_keys, p_ids, p_payloads, p_encrypted, p_traces,
                           array_fill(p_sub, ARRAY[cardinality(p_ids)]), p_now, true) x;
    END IF;

    IF v_pos IS NOT NULL
       AND qg_ack_batch_end(p_ack_pids[1], p_ack_groups[1], v_pos,
                            -- the leases the ack may be checked against (docs/api/transaction.md §4):
                            -- its own, else requiredLeases (resolved to the pair's lease when listed),
                            -- else none (lease-less)
                            CASE WHEN p_ack_leases[1] IS NOT NULL THEN ARRAY[p_ack_leases[1]]
                                 WHEN cardinality(array_remove(p_required, NULL)) > 0 THEN array_remove(p_required, NULL)
                            END, p_now) THEN
        v_ack := ARRAY[ROW(0, true, NULL, v_qname, NULL, true, false, false)::qg_ack_result];
    ELSIF cardinality(p_ack_idx) > 0 THEN
        -- Step 10: consumer rows locked in ascending order; evaluated as on the ack route.
        SELECT array_agg(x) INTO v_ack
        FROM qg_ack_items(p_ack_pids, p_ack_keys, p_ack_groups, p_ack_statuses, p_ack_leases,
                          p_ack_errors, p_required, p_now) x;
        SELECT p_ack_pids[r.i + 1] AS pid, r.error INTO v_bad
        FROM unnest(v_ack) r WHERE NOT r.success
        ORDER BY CASE r.error WHEN 'QG004' THEN 0 WHEN 'QG005' THEN 1 ELSE 2 END,
                 p_ack_idx[r.i + 1]
        LIMIT 1;
        IF FOUND THEN
            -- The ack verdict's code is the rollback's code; DETAIL carries the partition.
            RAISE EXCEPTION USING ERRCODE = v_bad.error, MESSAGE = v_bad.error,
                DETAIL = json_build_array(v_bad.pid::text)::text;
        END IF;
    END IF;

    RETURN QUERY
        SELECT p_push_idx[x.i + 1], 'push', x.status, x.mid, x.pid, x.qname, false, false, false
        FROM unnest(v_push) x
        UNION ALL
        SELECT p_ack_idx[r.i + 1], 'ack', NULL, NULL, p_ack_pids[r.i + 1], r.queue_name, r.dlq,
               r.already_committed, r.lease_released
        FROM unnest(v_ack) r
        ORDER BY 1;
END $$;

-- qg_transaction is the call as one JSON object, read by name into qg_txn_call: a key the type
-- lacks is ignored and a field the object lacks is NULL, so the Go side's keys are checked
-- against the type's fields (TestJSONCallsMatchTheirTypes). PL/pgSQL: as an SQL function (not
-- inlined, being volatile) its body was planned again on every call.
CREATE OR REPLACE FUNCTION qg_transaction(p_call jsonb)
RETURNS SETOF qg_txn_result LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM qg_transaction_run(jsonb_populate_record(NULL::qg_txn_call, p_call));
END $$;
