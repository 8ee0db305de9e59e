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
-- p_requests is a JSON array of requests, each qg_transaction's argument (qg_txn_call, read by
-- name). A request's pids are its pushes' partition ids when the caller knows them all (its
-- cache), else null: the names are resolved here.
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
-- At most 24 requests per call (MaxTxnCall in transaction_many.go): every request's block is
-- a subtransaction, qg_push_set (a request of several pushes) opens one more for its NOWAIT
-- lock, and the pre-lock of the partitions one: at most 49 subtransactions with an XID, within
-- the 64 a backend caches (PGPROC_MAX_CACHED_SUBXIDS). Beyond that the transaction's
-- subtransactions overflow to pg_subtrans, and every snapshot taken while it runs, in any
-- session, gets slower.
CREATE OR REPLACE FUNCTION qg_transaction_many(p_requests jsonb)
RETURNS SETOF qg_txn_many_row LANGUAGE plpgsql AS $$
DECLARE
    v_calls    qg_txn_call[] := ARRAY(
                   SELECT jsonb_populate_record(NULL::qg_txn_call, e.v)
                   FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (v, ord) ORDER BY e.ord);
    v_n        integer := coalesce(cardinality(v_calls), 0);
    v_c        qg_txn_call;
    v_run      boolean[] := '{}';  -- per request: run it (its partitions all exist)
    v_lock     uuid[] := '{}';     -- the partitions of the requests that run
    v_ack_pids uuid[] := '{}';     -- the (partition, group) pairs of their acks
    v_ack_grps text[] := '{}';
    v_pid      uuid;
    v_rows     qg_txn_result[];
    v_code     text;
    v_msg      text;
    v_detail   text;
BEGIN
    -- Before anything reads messages: its pushes' open segment and every later read of
    -- messages see no rotation or all of one (qg_segment_open_lock, 093_segments.sql). Taken
    -- here, outside the requests' blocks: the shared lock each request's qg_transaction_run
    -- takes inside its block goes when that request fails (its subtransaction is rolled back,
    -- locks and all), while the requests before it stay written in this transaction.
    PERFORM pg_advisory_xact_lock_shared(qg_job_lock_key('segment_open'));
    -- Which requests run, and what they lock. Each request's partition ids: known ones as
    -- given, the others resolved by name (two unique-index lookups each, as qg_partition_ids;
    -- coalesce skips the lookup of a known id). The ids locked here are the ones the request
    -- runs with, never resolved again: a partition created since would be locked out of order.
    FOR k IN 1..v_n LOOP
        v_c := v_calls[k];
        IF coalesce(cardinality(v_c.queues), 0) > 0 THEN
            v_c.pids := ARRAY(
                SELECT coalesce(u.pid, (SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
                                        WHERE q.name = u.q AND p.name = u.pn))
                FROM unnest(v_c.queues, v_c.partitions, coalesce(v_c.pids, '{}')) WITH ORDINALITY AS u (q, pn, pid, ord)
                ORDER BY u.ord);
        ELSE
            v_c.pids := NULL;
        END IF;
        v_calls[k] := v_c;
        v_run[k] := v_c.pids IS NULL OR array_position(v_c.pids, NULL) IS NULL;
        IF v_run[k] THEN
            v_lock := v_lock || coalesce(v_c.pids, '{}');
            v_ack_pids := v_ack_pids || coalesce(v_c.ack_pids, '{}');
            v_ack_grps := v_ack_grps || coalesce(v_c.ack_groups, '{}');
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
        BEGIN
            -- Collected before they are returned: rows returned inside the block would stay
            -- in the result even if the block then rolled back.
            SELECT array_agg(x ORDER BY x.i) INTO v_rows FROM qg_transaction_run(v_calls[k]) x;
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
