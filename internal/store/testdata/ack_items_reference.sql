-- The item-by-item qg_ack_items as it was before the set-based rewrite (commit 2814ff9),
-- installed by TestAckBatchEqualsAckPerPair as qg_ack_items_ref: the reference the set-based
-- function must agree with. Not part of the schema.
-- Evaluates and applies ack items (docs/api/concepts.md §8.2), shared by the ack routes and the
-- transaction route. Items naming the same (partition, group) form an ack group, evaluated
-- under that pair's row lock against the state at the start; groups are locked in ascending
-- (partition id, group) order, the order of every write path.
--
-- p_statuses are normalised: completed | failed | retry | dlq. A NULL p_leases element is a
-- lease-less ack unless p_required (the transaction's requiredLeases) resolves one (docs/api/transaction.md §4).
-- Never raises for a rejected item: the caller decides (the ack route reports, a transaction
-- rolls back).
CREATE OR REPLACE FUNCTION qg_ack_items_ref(
    p_pids uuid[], p_keys text[], p_groups text[], p_statuses text[], p_leases uuid[],
    p_errors text[], p_required uuid[], p_now timestamptz)
RETURNS SETOF qg_ack_result LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now       timestamptz := coalesce(p_now, clock_timestamp());
    v_required  uuid[] := (SELECT array_agg(DISTINCT r) FROM unnest(p_required) r WHERE r IS NOT NULL);
    v_out       qg_ack_result[] := '{}';
    v_g         record;
    v_it        record;
    v_q         record;
    v_c         consumers%ROWTYPE;
    v_has       boolean;
    v_live      boolean;
    v_cursor    bigint;
    v_r         integer;
    v_released  boolean;
    v_dlq_any   boolean;
    v_lease     uuid;
    v_err       text;
    v_first     integer;
    v_res       qg_ack_result;
BEGIN
    IF v_required IS NULL THEN
        RETURN QUERY SELECT * FROM qg_ack_batch_fast(p_pids, p_keys, p_groups, p_statuses, p_leases, v_now);
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    FOR v_g IN SELECT DISTINCT u.pid, u.grp FROM unnest(p_pids, p_groups) AS u (pid, grp)
               ORDER BY u.pid, u.grp
    LOOP
        SELECT q.id, q.name AS qname, p.name AS pname, q.retry_limit, q.retry_delay INTO v_q
        FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = v_g.pid;
        v_has := false;
        IF v_q.id IS NOT NULL THEN
            SELECT * INTO v_c FROM consumers c
            WHERE c.partition_id = v_g.pid AND c.consumer_group = v_g.grp FOR UPDATE;
            v_has := FOUND;
        END IF;
        IF NOT v_has THEN
            v_c := NULL;
        END IF;
        v_live := v_has AND v_c.lease_id IS NOT NULL AND v_c.lease_expires_at > v_now;
        v_cursor := coalesce(v_c.cursor, 0);
        v_r := coalesce(v_c.retry_count, 0);
        v_released := false;
        v_dlq_any := false;
        v_first := cardinality(v_out) + 1;

        -- Step 1 and 2 in one pass: items in ascending position (ties in request order);
        -- a rejected item's checks use only the start state, so the order does not change them.
        FOR v_it IN
            SELECT (u.ord - 1)::int AS i, m.position AS pos, u.st, u.lease, u.err
            FROM unnest(p_pids, p_keys, p_groups, p_statuses, p_leases, p_errors)
                 WITH ORDINALITY AS u (pid, k, grp, st, lease, err, ord)
            LEFT JOIN messages m ON m.partition_id = u.pid AND m.transaction_id = u.k
            WHERE u.pid IS NOT DISTINCT FROM v_g.pid AND u.grp = v_g.grp
            ORDER BY m.position NULLS FIRST, u.ord
        LOOP
            v_res := ROW(v_it.i, true, NULL, v_q.qname, v_q.pname, false, false, false);
            v_lease := v_it.lease;
            IF v_lease IS NULL AND v_required IS NOT NULL THEN
                v_lease := CASE
                    WHEN v_c.lease_id = ANY (v_required) THEN v_c.lease_id
                    WHEN cardinality(v_required) = 1 THEN v_required[1]
                    ELSE '00000000-0000-0000-0000-000000000000'::uuid END;
            END IF;
            IF v_it.pos IS NULL THEN
                v_res.success := false; v_res.error := 'QG004'; -- codes only: Go holds the texts (mq.Code)
            ELSIF v_it.pos <= coalesce(v_c.cursor, 0) THEN
                v_res.already_committed := true;
            ELSIF v_lease IS NOT NULL AND NOT (v_live AND v_lease = v_c.lease_id) THEN
                v_res.success := false; v_res.error := 'QG005';
            ELSIF v_c.batch_end IS NULL OR v_it.pos > v_c.batch_end THEN
                v_res.success := false; v_res.error := 'QG006';
            ELSIF v_released THEN
                NULL; -- after a release point: success, no effect, delivered again
            ELSIF v_it.st = 'completed' THEN
                v_cursor := greatest(v_cursor, v_it.pos);
            ELSIF v_it.st = 'dlq' OR (v_it.st = 'failed' AND v_r >= v_q.retry_limit) THEN
                v_err := coalesce(nullif(v_it.err, ''),
                                  CASE v_it.st WHEN 'dlq' THEN 'Moved to DLQ' ELSE 'Retries exhausted' END);
                PERFORM qg_dead_letter(v_g.pid, v_it.pos, v_g.grp, v_err, v_r, v_now);
                v_res.dlq := true;
                v_dlq_any := true;
                v_cursor := greatest(v_cursor, v_it.pos);
            ELSE
                v_released := true; -- failed with retries left, or retry: a release point
                IF v_it.st = 'failed' THEN
                    v_r := v_r + 1;
                    v_c.retry_not_before := v_now + v_q.retry_delay * interval '1 millisecond';
                END IF;
            END IF;
            v_out := v_out || v_res;
        END LOOP;

        IF v_has THEN
            IF NOT v_released AND v_c.batch_end IS NOT NULL AND v_cursor >= v_c.batch_end THEN
                v_released := true; -- the batch completed
                v_r := 0;
            END IF;
            IF v_dlq_any THEN
                v_r := 0;
            END IF;
            PERFORM qg_ack_settle(v_g.pid, v_g.grp, v_c.cursor, v_cursor, v_r, v_c.retry_not_before,
                                  v_released, v_now);
            v_live := v_live AND NOT v_released;
        END IF;
        FOR v_it IN SELECT generate_series(v_first, cardinality(v_out)) AS k LOOP
            v_out[v_it.k].lease_released := NOT v_live;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT * FROM unnest(v_out) x ORDER BY x.i;
END $$;
