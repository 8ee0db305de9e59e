-- qg_push for small calls: the same function under generic plans. Every statement of
-- qg_push_items takes its items as arrays, so PostgreSQL never trusts its generic plan (it
-- estimates the arrays' sizes) and re-plans about ten statements on every call: for a call of
-- a few coalesced single-message pushes, planning was a quarter of its database CPU, which
-- is the fixed cost each small call pays per message. Large calls keep qg_push and its custom
-- plans, which size the window plan to the request (docs/decisions.md). The setting holds for
-- the nested qg_push_items too: one plan cache serves both, each call choosing by the
-- setting in force.
CREATE OR REPLACE FUNCTION qg_push_small(
    p_queues text[], p_partitions text[], p_pair_ids uuid[], p_pair_of integer[], p_keys text[],
    p_ids uuid[], p_payloads text[], p_encrypted boolean[], p_subs text[], p_uncapped boolean[],
    p_now timestamptz)
RETURNS SETOF qg_push_plan LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT * FROM qg_push(p_queues, p_partitions, p_pair_ids, p_pair_of, p_keys, p_ids,
        p_payloads, p_encrypted, p_subs, p_uncapped, p_now);
END $$;
