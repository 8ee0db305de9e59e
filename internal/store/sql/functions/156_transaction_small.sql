-- qg_transaction for small calls: the same transaction under generic plans, for the reason
-- qg_push_small gives (155_push_small.sql). A pipeline stage's call (one ack and one push)
-- re-planned the created-at, capacity and lock statements of its qg_push_items on every call:
-- 1.2 ms of planning per transaction (pg_stat_statements with track_planning, queen-bench
-- txn × 50), about a third of its database time. Large calls keep qg_transaction and its
-- custom plans.
CREATE OR REPLACE FUNCTION qg_transaction_small(
    p_push_idx integer[], p_queues text[], p_partitions text[], p_keys text[], p_ids uuid[],
    p_payloads text[], p_encrypted boolean[], p_traces uuid[],
    p_ack_idx integer[], p_ack_pids uuid[], p_ack_keys text[], p_ack_groups text[],
    p_ack_statuses text[], p_ack_leases uuid[], p_ack_errors text[],
    p_required uuid[], p_sub text, p_now timestamptz, p_tenant text, p_pids uuid[])
RETURNS SETOF qg_txn_result LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT * FROM qg_transaction(p_push_idx, p_queues, p_partitions, p_keys, p_ids,
        p_payloads, p_encrypted, p_traces, p_ack_idx, p_ack_pids, p_ack_keys, p_ack_groups,
        p_ack_statuses, p_ack_leases, p_ack_errors, p_required, p_sub, p_now, p_tenant, p_pids);
END $$;
