-- Compaction of the hot tables under a pinned snapshot horizon (docs/design.md, "Steady under a
-- pinned horizon"). Pushes update their partitions' heads, pops and acks their consumer rows,
-- and the work index gains and loses a pair per message. While some session keeps an old
-- snapshot open, neither VACUUM nor page pruning may remove the versions those writes leave
-- behind, and every later lookup of a row walks all of its versions: after two minutes, pops
-- and pushes ran at a tenth and a quarter of their speed (bench/HISTORY.md). A rewrite removes
-- them anyway: the live rows are read, the tables truncated and the rows written back, in one
-- transaction under an exclusive lock (TRUNCATE gives the tables new files, so nothing of the
-- old versions is left to walk). Each set is the tables one TRUNCATE must take together
-- (foreign keys). The broker runs it from its maintenance loop (maintenance/compact.go), only
-- while a snapshot is held and only when the lock comes within a few milliseconds.

-- The hot sets, and their live and dead row versions (the statistics system's running
-- estimates). blocker_pid: a session other than the caller that holds a lock on one of the
-- set's tables and has been in its transaction for more than a second (a rewrite would wait
-- for it in vain); NULL when none does. Whether a horizon is held is the broker's
-- XminHorizon reading (queries/analytics.sql).
CREATE OR REPLACE FUNCTION qg_hot_sets()
RETURNS TABLE (hot_set text, live bigint, dead bigint, blocker_pid integer, blocker text)
LANGUAGE sql STABLE AS $$
    WITH sets (hot_set, tables) AS (
        VALUES ('partition_heads', ARRAY['partition_heads']),
               ('consumers', ARRAY['consumers', 'requeued', 'skip_marks']),
               ('partition_work', ARRAY['partition_work'])
    )
    SELECT s.hot_set, coalesce(sum(t.n_live_tup), 0)::bigint, coalesce(sum(t.n_dead_tup), 0)::bigint,
           b.pid, b.who
    FROM sets s
    LEFT JOIN pg_stat_user_tables t ON t.schemaname = current_schema() AND t.relname = ANY (s.tables)
    LEFT JOIN LATERAL (
        SELECT a.pid, coalesce(nullif(a.application_name, ''), a.usename::text, '') || ' (' || a.state || ')' AS who
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
          AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
          AND l.relation IN (SELECT c.oid FROM pg_class c
                             WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY (s.tables))
          AND a.xact_start < clock_timestamp() - interval '1 second'
        ORDER BY a.xact_start, a.pid
        LIMIT 1) b ON true
    GROUP BY s.hot_set, b.pid, b.who
    ORDER BY s.hot_set;
$$;

-- Rewrites one hot set (see above): rows is how many rows it wrote back, -1 when another
-- instance is compacting the set, -2 when its tables' locks did not come within
-- p_lock_timeout_ms (nothing changed); held_ms is how long it has held them by its end (the
-- commit adds its flush). Waiting for the locks holds up every request that touches the
-- tables, so the timeout is short; the next check tries again. The caller bounds the whole
-- call with statement_timeout: a rewrite that runs past it is rolled back and changes nothing.
--
-- The live rows are kept in temporary tables dropped at commit, not in arrays: an array is one
-- value, which PostgreSQL limits to 1 GB, so a set of several million rows could not be
-- copied at all; a temporary table has no such limit and spills to disk past temp_buffers.
-- The temporary tables cost a few catalog rows per rewrite.
CREATE OR REPLACE FUNCTION qg_compact_hot(p_set text, p_lock_timeout_ms integer)
RETURNS TABLE (rows bigint, held_ms double precision) LANGUAGE plpgsql AS $$
DECLARE
    v_locked timestamptz;
    v_rows   bigint := 0;
    v_n      bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(20808, hashtext(current_schema() || '/' || p_set)) THEN
        RETURN QUERY SELECT -1::bigint, 0::double precision;
        RETURN;
    END IF;
    -- lock_timeout also bounds the row locks the foreign keys' checks take on partitions
    -- while the rows are written back: a wait there, too, rolls the rewrite back (-2).
    PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
    BEGIN
        CASE p_set
        WHEN 'partition_heads' THEN
            LOCK TABLE partition_heads IN ACCESS EXCLUSIVE MODE;
            v_locked := clock_timestamp();
            CREATE TEMP TABLE qg_compact_h ON COMMIT DROP AS SELECT * FROM partition_heads;
            TRUNCATE partition_heads;
            INSERT INTO partition_heads SELECT * FROM qg_compact_h;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
        WHEN 'consumers' THEN
            -- requeued and skip_marks reference consumers: one TRUNCATE takes all three.
            LOCK TABLE consumers, requeued, skip_marks IN ACCESS EXCLUSIVE MODE;
            v_locked := clock_timestamp();
            CREATE TEMP TABLE qg_compact_c ON COMMIT DROP AS SELECT * FROM consumers;
            CREATE TEMP TABLE qg_compact_r ON COMMIT DROP AS SELECT * FROM requeued;
            CREATE TEMP TABLE qg_compact_k ON COMMIT DROP AS SELECT * FROM skip_marks;
            TRUNCATE consumers, requeued, skip_marks;
            INSERT INTO consumers SELECT * FROM qg_compact_c;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            INSERT INTO requeued SELECT * FROM qg_compact_r;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_rows := v_rows + v_n;
            INSERT INTO skip_marks SELECT * FROM qg_compact_k;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_rows := v_rows + v_n;
        WHEN 'partition_work' THEN
            LOCK TABLE partition_work IN ACCESS EXCLUSIVE MODE;
            v_locked := clock_timestamp();
            CREATE TEMP TABLE qg_compact_w ON COMMIT DROP AS SELECT * FROM partition_work;
            TRUNCATE partition_work;
            INSERT INTO partition_work SELECT * FROM qg_compact_w;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
        END CASE;
    EXCEPTION WHEN lock_not_available THEN
        RETURN QUERY SELECT -2::bigint, 0::double precision;
        RETURN;
    END;
    RETURN QUERY SELECT v_rows, extract(epoch FROM clock_timestamp() - v_locked)::double precision * 1000;
END $$;
