-- One row of qg_transaction_many: an entry of a committed request (r and the columns of
-- qg_txn_result, err_code NULL), or the one row of a request that failed (r and err_code,
-- err_message, err_detail: the SQLSTATE, MESSAGE and DETAIL it raised; the rest NULL).
CREATE TYPE qg_txn_many_row AS (
    r                 integer,  -- the request, 1-based
    i                 integer,
    kind              text,
    status            text,
    message_id        uuid,
    partition_id      uuid,
    queue_name        text,
    dlq               boolean,
    already_committed boolean,
    lease_released    boolean,
    err_code          text,
    err_message       text,
    err_detail        text
);

-- Several independent POST /api/v1/transaction requests in one database transaction, committed
-- once (the broker's transaction coalescer). Each request runs through qg_transaction inside a
-- subtransaction of its own (the BEGIN ... EXCEPTION block below), so it is all or nothing on
-- its own: a request that raises rolls back to its block, changing nothing, and is answered
-- with its error; the others go on and commit together. Requests run in the order given, each
-- seeing what the ones before it wrote, as if they had been sent one after another.
--
-- The requests' arrays are qg_transaction's, flattened: request k's pushes are elements
-- p_push_starts[k] up to (not including) p_push_starts[k + 1] (the end of the arrays for the
-- last), its acks likewise by p_ack_starts, its requiredLeases by p_req_starts (all 1-based);
-- p_subs and p_tenants hold one element per request. p_pids are the pushes' partition ids
-- where the caller knows them (its cache: all of a request's, or none), NULL elsewhere: those
-- names are resolved here.
--
-- A request whose pushes name a partition that does not exist is not run: its row carries
-- QG001, and the caller runs it alone once this call committed (creating the partitions in
-- their own committed step, as Transaction does). So is a request whose known partition turns
-- out to be gone (qg_push_items raises QG001 in its block).
--
-- Locks. Every write path locks capped queues (FOR NO KEY UPDATE, ascending id), then
-- partitions (FOR NO KEY UPDATE, ascending id), then consumer rows (FOR UPDATE, ascending
-- (partition, group)), and so cannot deadlock with another. Here a request keeps the locks of
-- the requests before it until the one commit, so a request locking a partition below one an
-- earlier request holds would take them out of that order, and two merged calls (or a merged
-- call and a push) could each wait for the other. So every lock the requests will take is
-- taken first, in the global order, in three statements over all the requests: the capped
-- queues and the partitions of every push, then the consumer rows of every ack's (partition,
-- group); then the requests run, finding their rows already held by this transaction. What a
-- request writes besides (messages and work-index rows of the partitions and pairs it holds,
-- DLQ rows) it reaches through those locks, as a single transaction does. A row gone when the
-- pre-lock runs is simply not locked; the request then reports what it reports alone (a
-- missing partition, an unknown message). A request only ever gets the partition ids locked
-- here: a partition created in between is left to the request's run alone.
--
-- (A queue whose maxSize is raised from 0 between the pre-lock and a request's push is locked
-- by qg_push_items there, out of order: as rare as a configure racing the push, and then at
-- worst a deadlock PostgreSQL breaks, which rolls back that request as QDB.)
--
-- At most 24 requests per call (maxTxnCall in transaction_many.go): every request's block is
-- a subtransaction, qg_push_set (a request of several pushes) opens one more for its NOWAIT
-- lock, and the pre-lock of the partitions one: at most 49 subtransactions with an XID, within
-- the 64 a backend caches (PGPROC_MAX_CACHED_SUBXIDS). Beyond that the transaction's
-- subtransactions overflow to pg_subtrans, and every snapshot taken while it runs, in any
-- session, gets slower.
CREATE OR REPLACE FUNCTION qg_transaction_many(
    p_push_starts integer[], p_push_idx integer[], p_queues text[], p_partitions text[], p_keys text[],
    p_ids uuid[], p_payloads text[], p_encrypted boolean[], p_traces uuid[], p_pids uuid[],
    p_ack_starts integer[], p_ack_idx integer[], p_ack_pids uuid[], p_ack_keys text[], p_ack_groups text[],
    p_ack_statuses text[], p_ack_leases uuid[], p_ack_errors text[],
    p_req_starts integer[], p_required uuid[],
    p_subs text[], p_tenants text[], p_now timestamptz)
RETURNS SETOF qg_txn_many_row LANGUAGE plpgsql AS $$
DECLARE
    v_n        integer := coalesce(cardinality(p_tenants), 0);
    v_pids     uuid[];
    v_run      boolean[] := '{}';  -- per request: run it (its partitions all exist)
    v_lock     uuid[] := '{}';     -- the partitions of the requests that run
    v_ack_pids uuid[] := '{}';     -- the (partition, group) pairs of their acks
    v_ack_grps text[] := '{}';
    v_pid      uuid;
    v_ps integer; v_pe integer;    -- request k's slices: [v_ps, v_pe], [v_as, v_ae], [v_rs, v_re]
    v_as integer; v_ae integer;
    v_rs integer; v_re integer;
    v_rows     qg_txn_result[];
    v_code     text;
    v_msg      text;
    v_detail   text;
BEGIN
    IF coalesce(cardinality(p_push_starts), 0) <> v_n OR coalesce(cardinality(p_ack_starts), 0) <> v_n
       OR coalesce(cardinality(p_req_starts), 0) <> v_n OR coalesce(cardinality(p_subs), 0) <> v_n THEN
        RAISE EXCEPTION 'qg_transaction_many: % requests but % push, % ack, % required starts and % subs',
            v_n, cardinality(p_push_starts), cardinality(p_ack_starts), cardinality(p_req_starts), cardinality(p_subs);
    END IF;

    -- The pushes' partition ids: known ones as given, the others resolved by name (two
    -- unique-index lookups each, as qg_partition_ids; coalesce skips the lookup of a known id).
    v_pids := ARRAY(
        SELECT coalesce(u.pid, (SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
                                WHERE q.name = u.q AND p.name = u.pn))
        FROM unnest(p_pids, p_queues, p_partitions) WITH ORDINALITY AS u (pid, q, pn, ord)
        ORDER BY u.ord);

    -- Which requests run, and what they lock. (Slicing an array costs a walk to the slice, so
    -- this is linear in the call's items times the requests, at most 24.)
    FOR k IN 1..v_n LOOP
        v_ps := p_push_starts[k];
        v_pe := coalesce(p_push_starts[k + 1], coalesce(cardinality(p_ids), 0) + 1) - 1;
        v_run[k] := v_pe < v_ps OR array_position(v_pids[v_ps:v_pe], NULL) IS NULL;
        IF v_run[k] THEN
            v_as := p_ack_starts[k];
            v_ae := coalesce(p_ack_starts[k + 1], coalesce(cardinality(p_ack_idx), 0) + 1) - 1;
            v_lock := v_lock || v_pids[v_ps:v_pe];
            v_ack_pids := v_ack_pids || p_ack_pids[v_as:v_ae];
            v_ack_grps := v_ack_grps || p_ack_groups[v_as:v_ae];
        END IF;
    END LOOP;

    -- The pre-lock, in the global order (see above). Capped queues as qg_push_set locks them.
    PERFORM 1 FROM queues q
    WHERE q.max_size > 0 AND q.id IN (SELECT p.queue_id FROM partitions p WHERE p.id = ANY (v_lock))
    ORDER BY q.id FOR NO KEY UPDATE;
    -- The partitions as qg_push_set locks them: in one statement when none is held, else one
    -- statement each in the same order (a statement that waited re-checks every row updated
    -- meanwhile against its older snapshot; see qg_push_set). The failed NOWAIT attempt is
    -- rolled back, locks and all.
    BEGIN
        PERFORM 1 FROM partitions p WHERE p.id = ANY (v_lock) ORDER BY p.id FOR NO KEY UPDATE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        FOR v_pid IN SELECT DISTINCT x FROM unnest(v_lock) x ORDER BY x LOOP
            PERFORM 1 FROM partitions p WHERE p.id = v_pid FOR NO KEY UPDATE;
        END LOOP;
    END;
    -- The consumer rows as qg_ack_items locks them (the sort sits below the row locking).
    PERFORM 1 FROM consumers c
    WHERE (c.partition_id, c.consumer_group) IN (SELECT u.pid, u.grp FROM unnest(v_ack_pids, v_ack_grps) AS u (pid, grp))
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE;

    FOR k IN 1..v_n LOOP
        IF NOT v_run[k] THEN
            RETURN NEXT ROW(k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                            'QG001', 'QG001', NULL)::qg_txn_many_row;
            CONTINUE;
        END IF;
        v_ps := p_push_starts[k];
        v_pe := coalesce(p_push_starts[k + 1], coalesce(cardinality(p_ids), 0) + 1) - 1;
        v_as := p_ack_starts[k];
        v_ae := coalesce(p_ack_starts[k + 1], coalesce(cardinality(p_ack_idx), 0) + 1) - 1;
        v_rs := p_req_starts[k];
        v_re := coalesce(p_req_starts[k + 1], coalesce(cardinality(p_required), 0) + 1) - 1;
        BEGIN
            -- Collected before they are returned: rows returned inside the block would stay
            -- in the result even if the block then rolled back.
            SELECT array_agg(x ORDER BY x.i) INTO v_rows
            FROM qg_transaction(
                p_push_idx => p_push_idx[v_ps:v_pe], p_queues => p_queues[v_ps:v_pe],
                p_partitions => p_partitions[v_ps:v_pe], p_keys => p_keys[v_ps:v_pe], p_ids => p_ids[v_ps:v_pe],
                p_payloads => p_payloads[v_ps:v_pe], p_encrypted => p_encrypted[v_ps:v_pe],
                p_traces => p_traces[v_ps:v_pe],
                p_ack_idx => p_ack_idx[v_as:v_ae], p_ack_pids => p_ack_pids[v_as:v_ae],
                p_ack_keys => p_ack_keys[v_as:v_ae], p_ack_groups => p_ack_groups[v_as:v_ae],
                p_ack_statuses => p_ack_statuses[v_as:v_ae], p_ack_leases => p_ack_leases[v_as:v_ae],
                p_ack_errors => p_ack_errors[v_as:v_ae],
                -- NULL for a request without requiredLeases (qg_transaction reads NULL and '{}' alike)
                p_required => CASE WHEN v_re >= v_rs THEN p_required[v_rs:v_re] END,
                p_sub => p_subs[k], p_now => p_now, p_tenant => p_tenants[k],
                -- the ids pre-locked above, never resolved again: a partition created since
                -- would be locked out of order
                p_pids => CASE WHEN v_pe >= v_ps THEN v_pids[v_ps:v_pe] END) x;
        EXCEPTION WHEN OTHERS THEN
            -- (query_canceled is not caught: a statement timeout or cancel ends the whole call.)
            GET STACKED DIAGNOSTICS v_code = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT, v_detail = PG_EXCEPTION_DETAIL;
            RETURN NEXT ROW(k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                            v_code, v_msg, v_detail)::qg_txn_many_row;
            CONTINUE;
        END;
        RETURN QUERY SELECT k, x.i, x.kind, x.status, x.message_id, x.partition_id, x.queue_name, x.dlq,
                            x.already_committed, x.lease_released, NULL::text, NULL::text, NULL::text
                     FROM unnest(v_rows) x ORDER BY x.i;
    END LOOP;
END $$;
