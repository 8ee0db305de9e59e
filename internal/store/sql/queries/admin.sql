-- Admin reads (the listing, status and analytics routes; internal/store/admin.go).

-- Plans the rest of an admin read's implicit transaction for its arguments and the tables'
-- current size. A connection re-plans a prepared statement generically after five runs, and
-- keeps that plan: one made while the tables were nearly empty (a fresh database, the first
-- dashboard pages) scanned all 10,000 stats rows of a queue once per row of a page later
-- (0.7-1.3 s for the first page of a 10,000-partition queue instead of 15 ms). These reads are
-- rare next to pushes and pops, so planning each costs little.
-- name: admin_custom_plans
SELECT set_config('plan_cache_mode', 'force_custom_plan', true) AS plan_cache_mode
