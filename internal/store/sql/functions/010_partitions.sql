-- Tenant scope (docs/api/concepts.md §14; migration 0020, internal/store/scope.go): the view
-- queues shows the session's tenant's queues only. Objects reached by id rather than through
-- queues are checked with these, so that another tenant's answers as if it did not exist.

-- Whether the session sees every tenant (no scope, or the operator's).
CREATE OR REPLACE FUNCTION qg_scope_all() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('qg.scope', true), '') = '' OR current_setting('qg.scope', true) = '*';
$$;

-- Whether the session's scope sees queue p_qid.
CREATE OR REPLACE FUNCTION qg_sees_queue(p_qid uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT qg_scope_all() OR EXISTS (SELECT 1 FROM queues q WHERE q.id = p_qid);
$$;

-- Whether the session's scope sees partition p_pid (false for one that does not exist).
CREATE OR REPLACE FUNCTION qg_sees_partition(p_pid uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = p_pid);
$$;

-- p_pids with NULL (no partition) in place of each id the session's scope does not see: the
-- acks of another tenant's messages then answer as acks of unknown ones, and change nothing.
-- Each distinct partition is looked up once (the index scan of = ANY skips repeated keys),
-- however many items name it, and an array of one partition (an ack batch: a hundred items of
-- one partition) takes one probe and no sort. PL/pgSQL with a generic plan, so that the plan is
-- kept, not made again for each array: every ack runs it.
CREATE OR REPLACE FUNCTION qg_visible_pids(p_pids uuid[]) RETURNS uuid[] LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    IF qg_scope_all() THEN
        RETURN p_pids;
    END IF;
    IF p_pids[1] = ALL (p_pids) THEN -- NULL, not true, when an item has no partition
        IF EXISTS (SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = p_pids[1]) THEN
            RETURN p_pids;
        END IF;
        RETURN array_fill(NULL::uuid, ARRAY[cardinality(p_pids)]);
    END IF;
    RETURN (SELECT coalesce(array_agg(s.id ORDER BY u.o), '{}')
            FROM unnest(p_pids) WITH ORDINALITY AS u (pid, o)
            LEFT JOIN (SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
                       WHERE p.id = ANY (p_pids)) s ON s.id = u.pid);
END $$;

-- Serialises, per queue, partition creation and group registration: a partition created while
-- a group registers would otherwise be missed both by the registration (not there yet) and by
-- the pushes into it (they would not see the registration yet), leaving its work unlisted.
CREATE OR REPLACE FUNCTION qg_lock_queue_groups(p_queue_ids uuid[]) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(20807, hashtext(q::text))
    FROM (SELECT DISTINCT q FROM unnest(p_queue_ids) AS u (q) ORDER BY q) s;
$$;

-- Queue and partition creation, done in its own short committed step before any ordered
-- locking starts (spec docs/api/concepts.md §4.2), so creating a partition never waits inside a writer.
-- Rows are inserted in a fixed order so concurrent callers cannot deadlock on each other.
CREATE OR REPLACE FUNCTION qg_ensure_partitions(p_queues text[], p_partitions text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_limit bigint := qg_tenant_limit('queues'); -- the tenant's queue limit, its row locked
BEGIN
    INSERT INTO queues (id, name, namespace, task)
    SELECT gen_random_uuid(), s.q, split_part(s.q, '.', 1), split_part(s.q, '.', 2)
    FROM (SELECT DISTINCT q FROM unnest(p_queues) AS u (q)) s
    ORDER BY s.q
    ON CONFLICT (tenant, name) DO NOTHING;
    PERFORM qg_check_tenant_limit('queues', v_limit);

    PERFORM qg_lock_queue_groups(array_agg(q.id)) FROM queues q WHERE q.name = ANY (p_queues);

    -- Each partition with its push state (partition_heads, migration 0017).
    WITH added AS (
        INSERT INTO partitions (id, queue_id, name)
        SELECT gen_random_uuid(), q.id, x.p
        FROM (SELECT DISTINCT u.q, u.p FROM unnest(p_queues, p_partitions) AS u (q, p)) x
        JOIN queues q ON q.name = x.q
        ORDER BY q.id, x.p
        ON CONFLICT (queue_id, name) DO NOTHING
        RETURNING id)
    INSERT INTO partition_heads (partition_id) SELECT a.id FROM added a ORDER BY a.id;
END $$;

-- Resolves (queue name, partition name) pairs to partition ids, NULL where one does not exist.
-- PL/pgSQL, not SQL, because every push calls it: a SQL function that cannot be inlined is
-- parsed and planned again on each call, while PL/pgSQL keeps its plan. Each pair is two
-- unique-index lookups whatever the plan, so the kept plan stays right for a call of one pair
-- and of thousands (a join planned for a few pairs scanned every partition once per pair).
CREATE OR REPLACE FUNCTION qg_partition_ids(p_queues text[], p_partitions text[])
RETURNS uuid[] LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg((SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
                                       WHERE q.name = u.q AND p.name = u.pn) ORDER BY u.ord), '{}')
            FROM unnest(p_queues, p_partitions) WITH ORDINALITY AS u (q, pn, ord));
END $$;

-- Stored messages after p_after that carry a skip mark of every consumer whose cursor lies
-- before them: consumed (docs/api/concepts.md §10) although past the slowest cursor. Marks at
-- or below their own consumer's cursor mean nothing and are not counted. Costs the
-- partition's marks, which are few: a mark exists only while its message lies after the
-- cursor and was moved to the DLQ by request.
CREATE OR REPLACE FUNCTION qg_skipped_by_all(p_pid uuid, p_after bigint)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM (
        SELECT k.position
        FROM skip_marks k
        JOIN consumers c ON c.partition_id = k.partition_id AND c.consumer_group = k.consumer_group
        WHERE k.partition_id = p_pid AND k.position > p_after AND k.position > c.cursor
        GROUP BY k.position
        HAVING count(*) = (SELECT count(*) FROM consumers c2
                           WHERE c2.partition_id = p_pid AND c2.cursor < k.position)) x;
$$;

-- Unconsumed messages of a queue (docs/api/concepts.md §10): per partition, the messages past the
-- slowest consumer's cursor (all of them while the partition has no consumer), less those
-- every consumer behind them skips, plus those at or below it that lie in some group's
-- requeued set (§9.3).
-- VOLATILE although it writes nothing: it runs inside the push's statements (the maxSize
-- check), and a STABLE function reads with its caller's snapshot, taken before this body
-- locks consumers. A rewrite of the consumer state (qg_compact_hot) committing in between
-- would then look like empty tables (TRUNCATE is not MVCC-safe): no consumer, every stored
-- message unconsumed, and a push the queue has room for refused. A VOLATILE SQL function
-- takes its own snapshot after its statements have locked their tables, so it sees the
-- rewritten rows. (qg_skipped_by_all, below it, reads with this one's snapshot, taken once
-- consumers is locked: no rewrite of the set can commit after it.)
CREATE OR REPLACE FUNCTION qg_unconsumed_count(p_queue_id uuid)
RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(sum((SELECT count(*) FROM messages m WHERE m.partition_id = p.id AND m.position > x.lo)
                        - qg_skipped_by_all(p.id, x.lo)
                        + (SELECT count(DISTINCT r.position) FROM requeued r
                           WHERE r.partition_id = p.id AND r.position <= x.lo)), 0)
    FROM partitions p
    CROSS JOIN LATERAL (SELECT coalesce(min(c.cursor), 0) AS lo FROM consumers c WHERE c.partition_id = p.id) x
    WHERE p.queue_id = p_queue_id;
$$;
