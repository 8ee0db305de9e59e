-- Creates a queue or replaces its whole configuration, and makes sure its Default partition
-- exists (docs/api/data-api.md §1). p_opts carries all 16 options with their effective values.
CREATE OR REPLACE FUNCTION qg_configure(p_name text, p_namespace text, p_task text, p_opts jsonb,
    OUT queue_id uuid, OUT partition_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    v_limit bigint := qg_tenant_limit('queues'); -- the tenant's queue limit, its row locked
BEGIN
    INSERT INTO queues AS q (id, name, namespace, task, lease_time, retry_limit, retry_delay,
        priority, max_size, ttl, dead_letter_queue, dlq_after_max_retries, delayed_processing,
        window_buffer, retention_seconds, completed_retention_seconds, retention_enabled,
        encryption_enabled, max_wait_time_seconds, dedup_window_seconds)
    VALUES (gen_random_uuid(), p_name, p_namespace, p_task,
        (p_opts->>'leaseTime')::int, (p_opts->>'retryLimit')::int, (p_opts->>'retryDelay')::int,
        (p_opts->>'priority')::int, (p_opts->>'maxSize')::int, (p_opts->>'ttl')::int,
        (p_opts->>'deadLetterQueue')::boolean, (p_opts->>'dlqAfterMaxRetries')::boolean,
        (p_opts->>'delayedProcessing')::int, (p_opts->>'windowBuffer')::int,
        (p_opts->>'retentionSeconds')::int, (p_opts->>'completedRetentionSeconds')::int,
        (p_opts->>'retentionEnabled')::boolean, (p_opts->>'encryptionEnabled')::boolean,
        (p_opts->>'maxWaitTimeSeconds')::int, (p_opts->>'dedupWindowSeconds')::int)
    ON CONFLICT (tenant, name) DO UPDATE SET
        namespace = EXCLUDED.namespace, task = EXCLUDED.task,
        lease_time = EXCLUDED.lease_time, retry_limit = EXCLUDED.retry_limit,
        retry_delay = EXCLUDED.retry_delay, priority = EXCLUDED.priority,
        max_size = EXCLUDED.max_size, ttl = EXCLUDED.ttl,
        dead_letter_queue = EXCLUDED.dead_letter_queue,
        dlq_after_max_retries = EXCLUDED.dlq_after_max_retries,
        delayed_processing = EXCLUDED.delayed_processing, window_buffer = EXCLUDED.window_buffer,
        retention_seconds = EXCLUDED.retention_seconds,
        completed_retention_seconds = EXCLUDED.completed_retention_seconds,
        retention_enabled = EXCLUDED.retention_enabled,
        encryption_enabled = EXCLUDED.encryption_enabled,
        max_wait_time_seconds = EXCLUDED.max_wait_time_seconds,
        dedup_window_seconds = EXCLUDED.dedup_window_seconds,
        updated_at = now()
    RETURNING q.id INTO queue_id;
    PERFORM qg_check_tenant_limit('queues', v_limit);

    SELECT p.id INTO partition_id FROM partitions p WHERE p.queue_id = qg_configure.queue_id AND p.name = 'Default';
    IF partition_id IS NULL THEN
        PERFORM qg_lock_queue_groups(ARRAY[queue_id]);
        INSERT INTO partitions (id, queue_id, name) VALUES (gen_random_uuid(), queue_id, 'Default')
        ON CONFLICT ON CONSTRAINT partitions_queue_id_name_key DO NOTHING
        RETURNING id INTO partition_id;
        IF partition_id IS NOT NULL THEN
            INSERT INTO partition_heads (partition_id) VALUES (partition_id);
        ELSE -- created meanwhile by a push
            SELECT p.id INTO partition_id FROM partitions p
            WHERE p.queue_id = qg_configure.queue_id AND p.name = 'Default';
        END IF;
    END IF;
    -- A changed configuration can make partitions deliverable (e.g. a shorter windowBuffer).
    PERFORM qg_notify_queue(queue_id);
END $$;
