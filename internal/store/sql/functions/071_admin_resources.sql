-- Resources (docs/api/admin-api.md §1): queue, namespace and task summaries, queue detail and
-- queue deletion (the overview is in 125_admin_overview.sql). Counters come from
-- qg_partition_counts.

-- Deletes a queue and, through the foreign keys, everything of it (docs/api/concepts.md §2.1):
-- partitions, messages, trace records, dedup keys, consumer state and work index,
-- subscriptions, DLQ entries.
-- Returns false when there is no such queue. Locks follow the order of every write path — the
-- queue row (as capped pushers and configure take it), its partitions in ascending id order,
-- then its consumer rows — so a pusher holding partition locks is waited for, never
-- deadlocked with. FOR NO KEY UPDATE on the queue lets foreign-key checks of in-flight writers
-- proceed. The queue's creation lock (qg_lock_queue_groups), taken right after the queue row,
-- makes a concurrent partition creation wait for the deletion instead of creating partitions
-- the deletion then removes, so a push racing a deletion recreates the queue after it.
CREATE OR REPLACE FUNCTION qg_delete_queue(p_queue text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
BEGIN
    SELECT q.id INTO v_qid FROM queues q WHERE q.name = p_queue FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM qg_lock_queue_groups(ARRAY[v_qid]);
    PERFORM 1 FROM partitions p WHERE p.queue_id = v_qid ORDER BY p.id FOR UPDATE;
    PERFORM 1 FROM consumers c WHERE c.queue_id = v_qid ORDER BY c.partition_id, c.consumer_group FOR UPDATE;
    -- messages carry no foreign key (see 0001): remove them before their partitions cascade.
    DELETE FROM messages m WHERE m.partition_id IN (SELECT p.id FROM partitions p WHERE p.queue_id = v_qid);
    DELETE FROM queues q WHERE q.id = v_qid;
    -- The group listings read the stats job's lag (qg_lagging_pairs): its pairs go with it.
    DELETE FROM stats_consumers sc WHERE sc.queue_id = v_qid;
    RETURN true;
END $$;
