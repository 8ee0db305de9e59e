-- qg_push_set under generic plans, for the calls of 2 to 99 items that qg_push_items sends it.
-- Every statement of qg_push_set takes its items as arrays, so PostgreSQL never trusts its
-- generic plan (it estimates the arrays' sizes) and re-plans about ten statements on every
-- call: for a call of a few coalesced single-message pushes, planning was a quarter of its
-- database CPU, the fixed cost each small call pays per message. Calls of 100 items or more
-- keep qg_push_set's custom plans, which size the window plans to the request
-- (docs/decisions.md). Chosen in qg_push_items, so every writer (push route, transaction,
-- streams, DLQ copy) gets it; one plan cache serves both, each call choosing by the setting
-- in force. A generic plan is made once per session and kept while the tables grow: one made
-- while `partitions` held a page chose a sequential scan for its `id = ANY (…)` locks, and at
-- 100,000 partitions every small push scanned them all; qg_push_set runs with sequential
-- scans off for that reason (TestPushProbesPartitionsWhateverThePlanCached).
CREATE OR REPLACE FUNCTION qg_push_set_generic(
    p_pids uuid[], p_keys text[], p_ids uuid[], p_payloads text[], p_encrypted boolean[],
    p_traces uuid[], p_subs text[], p_now timestamptz, p_strict boolean,
    p_uncapped boolean[])
RETURNS SETOF qg_push_plan LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT * FROM qg_push_set(p_pids, p_keys, p_ids, p_payloads, p_encrypted, p_traces,
        p_subs, p_now, p_strict, p_uncapped);
END $$;
