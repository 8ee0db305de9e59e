-- Where a group's cursor starts on a partition it has no state on yet (docs/api/concepts.md §5.3).
-- p_mode: 'all' (also queue mode); 'timestamp': before the first message created at or after
-- p_ts; 'new': at registration, after every message created up to p_ts (the registering pop's
-- arrival), and on partitions met later, from the first.
-- VOLATILE, not STABLE: a STABLE function reads with its caller's snapshot, taken before this
-- function first locks partition_heads, and a hot-set rewrite (qg_compact_hot, TRUNCATE and
-- copy) that commits in between leaves that snapshot an empty table: the cursor would be NULL.
-- A volatile one takes its snapshot after the lock (docs/decisions.md, "Reads of hot
-- tables and the rewrite's TRUNCATE").
CREATE OR REPLACE FUNCTION qg_initial_cursor(
    p_partition_id uuid, p_mode text, p_ts timestamptz, p_at_registration boolean)
RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN p_mode = 'timestamp' OR (p_mode = 'new' AND p_at_registration) THEN
            coalesce((SELECT m.position - 1 FROM messages m
                      WHERE m.partition_id = p_partition_id
                        AND (m.created_at > p_ts OR (p_mode = 'timestamp' AND m.created_at = p_ts))
                      ORDER BY m.position LIMIT 1),
                     (SELECT h.last_position FROM partition_heads h WHERE h.partition_id = p_partition_id))
        ELSE 0
    END;
$$;

-- Lists in partition_work the pairs of p_group on these partitions that have messages after
-- their cursor (no cursor yet: any message).
CREATE OR REPLACE FUNCTION qg_track_work(p_partition_ids uuid[], p_group text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO partition_work (partition_id, consumer_group, queue_id, next_at)
    SELECT p.id, p_group, p.queue_id,
           coalesce((SELECT m.created_at FROM messages m WHERE m.partition_id = p.id
                     AND m.position > coalesce(c.cursor, 0) ORDER BY m.position LIMIT 1), '-infinity')
    FROM partitions p
    JOIN partition_heads h ON h.partition_id = p.id
    LEFT JOIN consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
    WHERE p.id = ANY (p_partition_ids) AND h.last_position > coalesce(c.cursor, 0)
    ORDER BY p.id
    -- A pair already listed by a newer message (its cursor just moved back) is listed by the
    -- older one now, or delayed-processing pops would not look at it until the newer is visible.
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET next_at = EXCLUDED.next_at
    WHERE partition_work.next_at > EXCLUDED.next_at;
$$;

-- Registers a group on each queue it has not popped before (docs/api/concepts.md §5.3; queue mode too,
-- always as mode all): records the subscription, gives a named group a cursor on every
-- partition that exists now, and lists the pairs with work. Later pops change nothing. The
-- partitions are share-locked so that no push commits between reading their last position
-- and the registration becoming visible to writers.
CREATE OR REPLACE FUNCTION qg_register(
    p_queue_ids uuid[], p_group text, p_mode text, p_ts timestamptz, p_now timestamptz)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_qids uuid[];
    v_pids uuid[];
BEGIN
    SELECT array_agg(q ORDER BY q) INTO v_qids FROM unnest(p_queue_ids) AS u (q)
    WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = u.q AND s.consumer_group = p_group);
    IF v_qids IS NULL THEN
        RETURN;
    END IF;
    PERFORM qg_lock_queue_groups(v_qids);
    WITH added AS (
        INSERT INTO subscriptions (queue_id, consumer_group, mode, subscription_timestamp, created_at)
        SELECT q, p_group, p_mode, CASE WHEN p_mode <> 'all' THEN p_ts END, p_now
        FROM unnest(v_qids) AS u (q)
        ON CONFLICT DO NOTHING
        RETURNING queue_id)
    SELECT array_agg(p.id ORDER BY p.id) INTO v_pids
    FROM partitions p WHERE p.queue_id IN (SELECT queue_id FROM added);
    IF v_pids IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1 FROM partitions p WHERE p.id = ANY (v_pids) ORDER BY p.id FOR SHARE;
    IF p_group <> '__QUEUE_MODE__' THEN
        INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
        SELECT p.id, p_group, p.queue_id, qg_initial_cursor(p.id, p_mode, p_ts, true)
        FROM partitions p WHERE p.id = ANY (v_pids) ORDER BY p.id
        ON CONFLICT DO NOTHING;
    END IF;
    PERFORM qg_track_work(v_pids, p_group);
END $$;

-- Takes a pair out of the work index when nothing is left after p_cursor, checked under a
-- share lock on the partition that no writer holds (a writer still committing keeps it listed).
CREATE OR REPLACE FUNCTION qg_clear_work(p_partition_id uuid, p_group text, p_cursor bigint)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_top bigint;
BEGIN
    PERFORM 1 FROM partitions p WHERE p.id = p_partition_id FOR SHARE SKIP LOCKED;
    IF FOUND THEN -- read under the lock (no writer holds it), so the head is the last commit's
        SELECT h.last_position INTO v_top FROM partition_heads h WHERE h.partition_id = p_partition_id;
    END IF;
    -- p_cursor may be stale (a pop's walk snapshot) and the cursor since moved back (seek,
    -- group deletion): check the current one, share-locked so that no such writer commits
    -- in between; a cursor being written keeps the pair listed.
    IF v_top IS NOT NULL AND p_cursor >= v_top THEN
        SELECT c.cursor INTO p_cursor FROM consumers c
        WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group FOR SHARE SKIP LOCKED;
        IF NOT FOUND THEN
            p_cursor := CASE WHEN EXISTS (SELECT 1 FROM consumers c WHERE c.partition_id = p_partition_id
                                          AND c.consumer_group = p_group) THEN -1 ELSE 0 END;
        ELSIF EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_partition_id AND r.consumer_group = p_group) THEN
            -- Its requeued set is served before the cursor (docs/api/concepts.md §9.3): listed while
            -- not empty. Rows join the set only under the consumer row's lock, held here.
            p_cursor := -1;
        END IF;
    END IF;
    IF v_top IS NOT NULL AND p_cursor >= v_top THEN
        DELETE FROM partition_work w WHERE w.partition_id = p_partition_id AND w.consumer_group = p_group;
    END IF;
END $$;

-- Moves a claimed pair's cursor over the marked messages right after it (they count as
-- consumed for the group, docs/api/concepts.md §10) and drops the marks the cursor has passed.
-- The caller holds the consumer row. Returns the cursor. Passing the leading marks keeps every
-- batch starting at a delivered message, and lets a pair whose remaining messages are all
-- marked reach its last position and leave the work index.
CREATE OR REPLACE FUNCTION qg_pass_marks(p_partition_id uuid, p_group text, p_cursor bigint)
RETURNS bigint LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_cursor bigint;
BEGIN
    -- The last marked position before the first unmarked message after the cursor (or the
    -- last mark when every message after it is marked); the walk stops at that message.
    SELECT max(k.position) INTO v_cursor FROM skip_marks k
    WHERE k.partition_id = p_partition_id AND k.consumer_group = p_group AND k.position > p_cursor
      AND k.position < coalesce((SELECT m.position FROM messages m
                                 WHERE m.partition_id = p_partition_id AND m.position > p_cursor
                                   AND NOT EXISTS (SELECT 1 FROM skip_marks x WHERE x.partition_id = p_partition_id
                                                     AND x.consumer_group = p_group AND x.position = m.position)
                                 ORDER BY m.position LIMIT 1), 9223372036854775807);
    IF v_cursor IS NOT NULL THEN
        UPDATE consumers c SET cursor = v_cursor
        WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group;
    END IF;
    v_cursor := greatest(p_cursor, coalesce(v_cursor, p_cursor));
    DELETE FROM skip_marks k
    WHERE k.partition_id = p_partition_id AND k.consumer_group = p_group AND k.position <= v_cursor;
    RETURN v_cursor;
END $$;

-- One delivered message of a pop (qg_claim, qg_pop).
CREATE TYPE qg_popped AS (
    id             uuid,
    transaction_id text,
    trace_id       uuid,
    payload        text,
    producer_sub   text,
    created_at     timestamptz,
    partition_id   uuid,
    partition_name text,
    queue_name     text,
    retry_count    integer,
    encrypted      boolean
);

-- Claims one pair for a pop: the consumer row is taken only if nobody holds it and the pair is
-- deliverable (docs/api/concepts.md §6.1); then the visible messages after the cursor, up to p_budget,
-- are leased under p_lease_id or consumed at once (p_auto_ack). A pair found with nothing left
-- leaves the work index. Returns the delivered messages (none: not claimed). p_has_row says
-- whether the pop's walk saw the group's consumer row on the partition.
CREATE OR REPLACE FUNCTION qg_claim(
    p_partition_id uuid, p_group text, p_has_row boolean, p_budget integer, p_auto_ack boolean,
    p_lease_id uuid, p_now timestamptz)
RETURNS SETOF qg_popped LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_c    consumers%ROWTYPE;
    v_p    record;
    v_n    integer;
    v_last bigint;
    v_next timestamptz;
    v_marks boolean;
BEGIN
    IF NOT p_has_row THEN
        -- A group's first claim of a partition gives it its cursor there, placed by its
        -- subscription (docs/api/concepts.md §5.3). Concurrent pops reaching a pair nobody claimed yet
        -- would all queue behind the insert of its consumer row, only to find the pair leased.
        -- The first takes this try-lock (held to its commit) and the others move on at once. It
        -- never waits, so it adds no lock-order edge; a hash collision only makes a pop skip a
        -- pair this once.
        IF NOT pg_try_advisory_xact_lock(hashtext(p_group), hashtext(p_partition_id::text)) THEN
            RETURN;
        END IF;
        INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
        SELECT p.id, p_group, p.queue_id,
               qg_initial_cursor(p.id, coalesce(s.mode, 'all'), s.subscription_timestamp, false)
        FROM partitions p
        LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.consumer_group = p_group
        WHERE p.id = p_partition_id
        ON CONFLICT DO NOTHING;
    END IF;
    -- Concurrent pops walk the same pairs in the same order, so most claims that fail, fail
    -- here, on the first statement of a claim of a known pair.
    SELECT * INTO v_c FROM consumers c
    WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group
      AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= p_now)
      AND (c.retry_not_before IS NULL OR c.retry_not_before <= p_now)
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN; -- leased, delayed, or another pop has it
    END IF;
    SELECT p.name AS pname, q.name AS qname, q.lease_time, q.delayed_processing, q.window_buffer,
           h.last_message_at
    INTO v_p
    FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
    WHERE p.id = p_partition_id;
    -- A pair with a requeued set is served from it first, held back by conditions 1-3 of §6.1
    -- only (docs/api/concepts.md §9.3). One probe; the set is nearly always empty.
    IF EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = p_partition_id AND r.consumer_group = p_group) THEN
        RETURN QUERY SELECT * FROM qg_claim_requeued(p_partition_id, p_group, p_budget, p_auto_ack, p_lease_id,
                                                     v_p.lease_time, v_p.pname, v_p.qname, p_now);
        RETURN;
    END IF;
    IF v_p.window_buffer > 0 AND v_p.last_message_at > p_now - v_p.window_buffer * interval '1 second' THEN
        RETURN;
    END IF;
    -- Skip marks (docs/api/concepts.md §9.1): messages moved to the DLQ by request for this group
    -- are passed over. One probe decides; pairs without marks (nearly all) pay nothing more,
    -- since the filters below test v_marks first.
    v_marks := EXISTS (SELECT 1 FROM skip_marks k
                       WHERE k.partition_id = p_partition_id AND k.consumer_group = p_group);
    IF v_marks THEN
        v_c.cursor := qg_pass_marks(p_partition_id, p_group, v_c.cursor);
    END IF;

    -- The visible messages after the cursor, up to the budget, stopping at the first one not
    -- visible yet (§6.1): after a clock step back a later message may look older, and it must
    -- not overtake the delayed one. One row past the budget is read too: the first message
    -- not in the batch, whose creation time reorders the pair in the work index.
    SELECT count(*) FILTER (WHERE s.taken), max(s.position) FILTER (WHERE s.taken),
           (array_agg(s.created_at ORDER BY s.position) FILTER (WHERE NOT s.taken))[1]
    INTO v_n, v_last, v_next FROM (
        SELECT m.position, m.created_at,
               bool_and(m.created_at <= p_now - v_p.delayed_processing * interval '1 second')
                   OVER (ORDER BY m.position) AND row_number() OVER (ORDER BY m.position) <= p_budget AS taken
        FROM messages m
        WHERE m.partition_id = p_partition_id AND m.position > v_c.cursor
          AND (NOT v_marks OR NOT EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_partition_id
                                            AND k.consumer_group = p_group AND k.position = m.position))
        ORDER BY m.position LIMIT p_budget + 1) s;
    IF v_n = 0 THEN
        PERFORM qg_clear_work(p_partition_id, p_group, v_c.cursor); -- nothing visible
        RETURN;
    END IF;

    IF p_auto_ack THEN
        UPDATE consumers c SET cursor = v_last, lease_id = NULL, lease_expires_at = NULL,
            batch_end = NULL, retry_count = 0, retry_not_before = NULL,
            messages_consumed = c.messages_consumed + v_n,
            batches_consumed = c.batches_consumed + 1, last_consumed_at = p_now
        WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group;
        -- Reorder the pair by the message after this batch, if any. A leased batch may come
        -- back (retry, expiry): its pair is reordered when an ack consumes it.
        IF v_next IS NOT NULL THEN
            UPDATE partition_work w SET next_at = v_next
            WHERE w.partition_id = p_partition_id AND w.consumer_group = p_group;
        END IF;
    ELSE
        UPDATE consumers c SET lease_id = p_lease_id,
            lease_expires_at = p_now + CASE v_p.lease_time WHEN 0 THEN 60 ELSE v_p.lease_time END
                                       * interval '1 second',
            batch_end = v_last
        WHERE c.partition_id = p_partition_id AND c.consumer_group = p_group;
    END IF;

    RETURN QUERY
    SELECT m.id, m.transaction_id, m.trace_id, m.payload::text, m.producer_sub, m.created_at,
           m.partition_id, v_p.pname, v_p.qname, v_c.retry_count, m.encrypted
    FROM messages m
    WHERE m.partition_id = p_partition_id AND m.position > v_c.cursor AND m.position <= v_last
      AND (NOT v_marks OR NOT EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = p_partition_id
                                        AND k.consumer_group = p_group AND k.position = m.position))
    ORDER BY m.position;
END $$;

-- One delivered message of qg_pop: the request it was claimed for (1-based), then the message.
CREATE TYPE qg_pop_row AS (
    req            integer,
    id             uuid,
    transaction_id text,
    trace_id       uuid,
    payload        text,
    producer_sub   text,
    created_at     timestamptz,
    partition_id   uuid,
    partition_name text,
    queue_name     text,
    retry_count    integer,
    encrypted      boolean
);

-- A pop (docs/api/concepts.md §6): walks the work index of the matched queues for p_group, oldest next
-- message first (higher-priority queues first), and claims up to p_max_partitions pairs,
-- sharing a budget of p_batches[r] messages, for each request r in turn: the broker merges
-- concurrent pops of the same target, group and options into one call (docs/design.md, "Group
-- commit for consumers"), each with its own batch size and lease (p_lease_ids[r]; NULL with
-- p_auto_ack). One walk serves them all, so no two requests of a call get the same pair, and
-- each is served only after the one before it is (a request left unserved means the walk found
-- nothing more). Contested pairs are skipped, never waited for; the walk stops as soon as the
-- last request is served, so its cost follows the work, not the partitions.
CREATE OR REPLACE FUNCTION qg_pop(
    p_queue text, p_partition text, p_namespace text, p_task text, p_group text,
    p_batches integer[], p_max_partitions integer, p_auto_ack boolean, p_lease_ids uuid[],
    p_sub_mode text, p_sub_ts timestamptz, p_now timestamptz)
RETURNS SETOF qg_pop_row LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_qids    uuid[];
    v_delay   integer;
    v_pid     uuid;
    v_cursor  bigint;
    v_drained boolean;
    v_has_row boolean;
    v_cur     refcursor;
    v_req     integer := 1; -- the request being served
    v_budget  integer := p_batches[1];
    v_lease   uuid := p_lease_ids[1];
    v_claimed integer := 0;
    v_n       integer;
    v_unreg   boolean;
    v_retry   integer;
BEGIN
    -- Whether the group still has to register on some matched queue is read with the queues,
    -- so a registered group (every pop after its first) pays no call for it. The subscription
    -- row is the truth: a group or queue deleted meanwhile, by any broker, has none, and this
    -- pop registers again.
    SELECT array_agg(q.id ORDER BY q.id), min(q.delayed_processing),
           bool_or(NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = q.id AND s.consumer_group = p_group))
    INTO v_qids, v_delay, v_unreg FROM queues q
    WHERE (p_queue IS NULL OR q.name = p_queue)
      AND (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task);
    IF v_qids IS NULL THEN
        RETURN;
    END IF;
    IF v_unreg THEN
        PERFORM qg_register(v_qids, p_group, CASE WHEN p_group = '__QUEUE_MODE__' THEN 'all' ELSE p_sub_mode END,
                            p_sub_ts, v_now);
    END IF;

    -- The walk skips pairs it can see are leased or inside their retry delay, so that many
    -- consumers on few partitions do not call qg_claim for every busy pair; pairs it can see
    -- are drained (their last batch was acked) leave the index without a claim attempt.
    IF p_partition IS NOT NULL THEN
        OPEN v_cur FOR SELECT w.partition_id, coalesce(c.cursor, 0), h.last_position <= coalesce(c.cursor, 0)
                   AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = w.partition_id AND r.consumer_group = w.consumer_group),
                   c.cursor IS NOT NULL
            FROM partition_work w JOIN partitions p ON p.id = w.partition_id JOIN partition_heads h ON h.partition_id = w.partition_id
            LEFT JOIN consumers c ON c.partition_id = w.partition_id AND c.consumer_group = w.consumer_group
            WHERE p.queue_id = v_qids[1] AND p.name = p_partition AND w.consumer_group = p_group
              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
              AND (c.retry_not_before IS NULL OR c.retry_not_before <= v_now);
    ELSIF cardinality(v_qids) = 1 THEN
        OPEN v_cur FOR SELECT w.partition_id, coalesce(c.cursor, 0), h.last_position <= coalesce(c.cursor, 0)
                   AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = w.partition_id AND r.consumer_group = w.consumer_group),
                   c.cursor IS NOT NULL
            FROM partition_work w JOIN partition_heads h ON h.partition_id = w.partition_id
            LEFT JOIN consumers c ON c.partition_id = w.partition_id AND c.consumer_group = w.consumer_group
            WHERE w.queue_id = v_qids[1] AND w.consumer_group = p_group
              AND w.next_at <= v_now - v_delay * interval '1 second'
              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
              AND (c.retry_not_before IS NULL OR c.retry_not_before <= v_now)
            ORDER BY w.next_at;
    ELSE
        OPEN v_cur FOR SELECT w.partition_id, coalesce(c.cursor, 0), h.last_position <= coalesce(c.cursor, 0)
                   AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = w.partition_id AND r.consumer_group = w.consumer_group),
                   c.cursor IS NOT NULL
            FROM partition_work w JOIN queues q ON q.id = w.queue_id JOIN partition_heads h ON h.partition_id = w.partition_id
            LEFT JOIN consumers c ON c.partition_id = w.partition_id AND c.consumer_group = w.consumer_group
            WHERE w.queue_id = ANY (v_qids) AND w.consumer_group = p_group
              AND w.next_at <= v_now - q.delayed_processing * interval '1 second'
              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
              AND (c.retry_not_before IS NULL OR c.retry_not_before <= v_now)
            ORDER BY q.priority DESC, w.next_at;
    END IF;
    LOOP
        IF v_budget <= 0 OR v_claimed >= p_max_partitions THEN
            -- This request is served: the next one, if any, is served from the rest of the walk.
            v_req := v_req + 1;
            EXIT WHEN v_req > cardinality(p_batches); -- all served: no further row read
            v_budget := p_batches[v_req];
            v_lease := p_lease_ids[v_req];
            v_claimed := 0;
        END IF;
        FETCH v_cur INTO v_pid, v_cursor, v_drained, v_has_row;
        EXIT WHEN NOT FOUND;
        IF v_drained THEN
            PERFORM qg_clear_work(v_pid, p_group, v_cursor);
            CONTINUE;
        END IF;
        v_n := 0;
        IF v_has_row AND NOT p_auto_ack THEN
            -- The claim of a known pair under a lease, inline (the usual pop): one statement
            -- takes the consumer row, as qg_claim's first does (most claims that fail, fail
            -- here), and one more, with a snapshot taken under that lock, leases the batch and
            -- returns it. It covers the plain case only: a pair with a requeued set or skip
            -- marks, inside its window buffer, or with nothing visible after the cursor leases
            -- nothing here and goes to qg_claim, which decides it under the same lock.
            SELECT c.cursor, c.retry_count INTO v_cursor, v_retry FROM consumers c
            WHERE c.partition_id = v_pid AND c.consumer_group = p_group
              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
              AND (c.retry_not_before IS NULL OR c.retry_not_before <= v_now)
            FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                CONTINUE; -- leased, delayed, or another pop has it
            END IF;
            -- The visible messages after the cursor, up to the budget, stopping at the first
            -- one not visible yet, as in qg_claim.
            RETURN QUERY
            WITH x AS (
                SELECT p.name AS pname, q.name AS qname, q.lease_time, q.delayed_processing
                FROM partitions p JOIN queues q ON q.id = p.queue_id JOIN partition_heads h ON h.partition_id = p.id
                WHERE p.id = v_pid
                  AND NOT (q.window_buffer > 0 AND h.last_message_at > v_now - q.window_buffer * interval '1 second')
                  AND NOT EXISTS (SELECT 1 FROM requeued r WHERE r.partition_id = v_pid AND r.consumer_group = p_group)
                  AND NOT EXISTS (SELECT 1 FROM skip_marks k WHERE k.partition_id = v_pid AND k.consumer_group = p_group)),
            s AS (
                SELECT m.position, m.id, m.transaction_id, m.trace_id, m.payload, m.producer_sub, m.created_at,
                       m.encrypted,
                       bool_and(m.created_at <= v_now - x.delayed_processing * interval '1 second')
                           OVER (ORDER BY m.position) AS visible
                FROM x, messages m
                WHERE m.partition_id = v_pid AND m.position > v_cursor
                ORDER BY m.position LIMIT v_budget),
            u AS (
                UPDATE consumers c SET lease_id = v_lease,
                    lease_expires_at = v_now + CASE x.lease_time WHEN 0 THEN 60 ELSE x.lease_time END
                                               * interval '1 second',
                    batch_end = t.last
                FROM x, (SELECT max(s.position) AS last FROM s WHERE s.visible) t
                WHERE c.partition_id = v_pid AND c.consumer_group = p_group AND t.last IS NOT NULL
                RETURNING c.batch_end)
            SELECT v_req, s.id, s.transaction_id, s.trace_id, s.payload::text, s.producer_sub, s.created_at,
                   v_pid, x.pname, x.qname, v_retry, s.encrypted
            FROM u, x, s
            WHERE s.visible AND s.position <= u.batch_end
            ORDER BY s.position;
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        IF v_n = 0 THEN
            RETURN QUERY SELECT v_req, c.* FROM qg_claim(v_pid, p_group, v_has_row, v_budget, p_auto_ack, v_lease, v_now) c;
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        IF v_n > 0 THEN
            v_budget := v_budget - v_n;
            v_claimed := v_claimed + 1;
        END IF;
    END LOOP;
    CLOSE v_cur;
END $$;

-- Extends a live lease on every pair that holds it (docs/api/concepts.md §7). Returns the earliest
-- resulting expiry, or NULL with p_state 'not_found' / 'expired'.
CREATE OR REPLACE FUNCTION qg_extend_lease(p_lease_id uuid, p_seconds integer, p_now timestamptz,
    OUT expires_at timestamptz, OUT state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
BEGIN
    -- Another tenant's lease is an unknown one.
    IF NOT qg_scope_all() AND NOT EXISTS (SELECT 1 FROM consumers c JOIN queues q ON q.id = c.queue_id
                                          WHERE c.lease_id = p_lease_id) THEN
        p_lease_id := NULL;
    END IF;
    -- Lock in the common consumer-row order so an extend never deadlocks with an ack batch.
    PERFORM 1 FROM consumers c WHERE c.lease_id = p_lease_id
    ORDER BY c.partition_id, c.consumer_group FOR NO KEY UPDATE;
    WITH upd AS (
        UPDATE consumers c
        SET lease_expires_at = greatest(c.lease_expires_at, v_now + p_seconds * interval '1 second')
        WHERE c.lease_id = p_lease_id AND c.lease_expires_at > v_now
        RETURNING c.lease_expires_at)
    SELECT min(u.lease_expires_at) INTO expires_at FROM upd u;
    IF expires_at IS NOT NULL THEN
        state := 'extended';
    ELSIF EXISTS (SELECT 1 FROM consumers c WHERE c.lease_id = p_lease_id) THEN
        state := 'expired';
    ELSE
        state := 'not_found';
    END IF;
END $$;
