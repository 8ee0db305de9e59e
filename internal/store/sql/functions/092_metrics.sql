-- Metrics flushed by every instance (docs/api/operations.md §5, docs/api/admin-api.md §6, §11).

-- Adds one instance's metric deltas to the per-minute tables and its running totals. p_workers
-- holds metrics_worker_minute rows and p_queues metrics_queue_minute rows as JSON objects
-- (every column but the instance's labels and updated_at, which come from the arguments).
-- Counters add up; gauges keep the largest sample of the minute. Deltas make a flush safe at
-- any time: nothing is counted twice and a failed flush can be retried with the deltas merged.
CREATE OR REPLACE FUNCTION qg_metrics_flush(
    p_worker text, p_hostname text, p_pid integer, p_workers jsonb, p_queues jsonb, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_labels jsonb := jsonb_build_object('worker_id', p_worker, 'hostname', p_hostname, 'pid', p_pid,
                                         'updated_at', v_now);
    -- Latency histograms a row leaves out (a sender older than migration 0010) count nothing
    -- rather than write NULL into their NOT NULL columns.
    v_hists  jsonb := jsonb_build_object('push_ms_hist', to_jsonb(array_fill(0, ARRAY[14])),
                                         'pop_ms_hist', to_jsonb(array_fill(0, ARRAY[14])),
                                         'ack_ms_hist', to_jsonb(array_fill(0, ARRAY[14])),
                                         'txn_ms_hist', to_jsonb(array_fill(0, ARRAY[14])));
BEGIN
    -- The record is built in FROM, once per row: "(jsonb_populate_record(…)).*" in the select
    -- list calls the function once per column (PostgreSQL expands it so), which made a flush of
    -- 10,000 queues' rows take over a second instead of a fifth.
    INSERT INTO metrics_worker_minute AS w
    SELECT r.*
    FROM jsonb_array_elements(p_workers) AS x (j)
    CROSS JOIN LATERAL jsonb_populate_record(NULL::metrics_worker_minute, v_hists || x.j || v_labels) AS r
    ON CONFLICT ON CONSTRAINT metrics_worker_minute_pkey DO UPDATE SET
        hostname = EXCLUDED.hostname, pid = EXCLUDED.pid, updated_at = EXCLUDED.updated_at,
        requests = w.requests + EXCLUDED.requests,
        push_requests = w.push_requests + EXCLUDED.push_requests,
        pop_requests = w.pop_requests + EXCLUDED.pop_requests,
        pop_empty = w.pop_empty + EXCLUDED.pop_empty,
        ack_requests = w.ack_requests + EXCLUDED.ack_requests,
        transactions = w.transactions + EXCLUDED.transactions,
        push_messages = w.push_messages + EXCLUDED.push_messages,
        pop_messages = w.pop_messages + EXCLUDED.pop_messages,
        ack_messages = w.ack_messages + EXCLUDED.ack_messages,
        ack_success = w.ack_success + EXCLUDED.ack_success,
        ack_failed = w.ack_failed + EXCLUDED.ack_failed,
        db_errors = w.db_errors + EXCLUDED.db_errors,
        dlq = w.dlq + EXCLUDED.dlq,
        leases_expired = w.leases_expired + EXCLUDED.leases_expired,
        push_ms_sum = w.push_ms_sum + EXCLUDED.push_ms_sum,
        push_ms_max = greatest(w.push_ms_max, EXCLUDED.push_ms_max),
        pop_ms_sum = w.pop_ms_sum + EXCLUDED.pop_ms_sum,
        pop_ms_max = greatest(w.pop_ms_max, EXCLUDED.pop_ms_max),
        ack_ms_sum = w.ack_ms_sum + EXCLUDED.ack_ms_sum,
        ack_ms_max = greatest(w.ack_ms_max, EXCLUDED.ack_ms_max),
        txn_ms_sum = w.txn_ms_sum + EXCLUDED.txn_ms_sum,
        txn_ms_max = greatest(w.txn_ms_max, EXCLUDED.txn_ms_max),
        push_ms_hist = qg_hist_sum(ARRAY[w.push_ms_hist, EXCLUDED.push_ms_hist]),
        pop_ms_hist = qg_hist_sum(ARRAY[w.pop_ms_hist, EXCLUDED.pop_ms_hist]),
        ack_ms_hist = qg_hist_sum(ARRAY[w.ack_ms_hist, EXCLUDED.ack_ms_hist]),
        txn_ms_hist = qg_hist_sum(ARRAY[w.txn_ms_hist, EXCLUDED.txn_ms_hist]),
        lag_ms_sum = w.lag_ms_sum + EXCLUDED.lag_ms_sum,
        lag_count = w.lag_count + EXCLUDED.lag_count,
        lag_ms_max = greatest(w.lag_ms_max, EXCLUDED.lag_ms_max),
        cpu_user_us = w.cpu_user_us + EXCLUDED.cpu_user_us,
        cpu_sys_us = w.cpu_sys_us + EXCLUDED.cpu_sys_us,
        rss_bytes = greatest(w.rss_bytes, EXCLUDED.rss_bytes),
        pool_size = greatest(w.pool_size, EXCLUDED.pool_size),
        pool_active = greatest(w.pool_active, EXCLUDED.pool_active),
        pool_idle = greatest(w.pool_idle, EXCLUDED.pool_idle),
        parked = greatest(w.parked, EXCLUDED.parked);

    INSERT INTO metrics_queue_minute AS m
    SELECT r.*
    FROM jsonb_array_elements(p_queues) AS x (j)
    CROSS JOIN LATERAL jsonb_populate_record(NULL::metrics_queue_minute, x.j || v_labels) AS r
    ON CONFLICT ON CONSTRAINT metrics_queue_minute_pkey DO UPDATE SET
        updated_at = EXCLUDED.updated_at,
        push_requests = m.push_requests + EXCLUDED.push_requests,
        push_messages = m.push_messages + EXCLUDED.push_messages,
        pop_requests = m.pop_requests + EXCLUDED.pop_requests,
        pop_messages = m.pop_messages + EXCLUDED.pop_messages,
        pop_empty = m.pop_empty + EXCLUDED.pop_empty,
        ack_requests = m.ack_requests + EXCLUDED.ack_requests,
        ack_messages = m.ack_messages + EXCLUDED.ack_messages,
        ack_success = m.ack_success + EXCLUDED.ack_success,
        ack_failed = m.ack_failed + EXCLUDED.ack_failed,
        transactions = m.transactions + EXCLUDED.transactions,
        dlq = m.dlq + EXCLUDED.dlq,
        lag_ms_sum = m.lag_ms_sum + EXCLUDED.lag_ms_sum,
        lag_count = m.lag_count + EXCLUDED.lag_count,
        lag_ms_max = greatest(m.lag_ms_max, EXCLUDED.lag_ms_max),
        parked = greatest(m.parked, EXCLUDED.parked);

    INSERT INTO metrics_totals AS t
    SELECT p_worker, p_hostname, p_pid, sum(r.push_requests), sum(r.pop_requests), sum(r.ack_requests),
           sum(r.transactions), sum(r.push_messages), sum(r.pop_messages), sum(r.ack_messages),
           sum(r.ack_success), sum(r.ack_failed), sum(r.db_errors), sum(r.dlq), sum(r.leases_expired),
           v_now
    FROM jsonb_populate_recordset(NULL::metrics_worker_minute, p_workers) r
    HAVING count(*) > 0
    ON CONFLICT ON CONSTRAINT metrics_totals_pkey DO UPDATE SET
        hostname = EXCLUDED.hostname, pid = EXCLUDED.pid, updated_at = EXCLUDED.updated_at,
        push_requests = t.push_requests + EXCLUDED.push_requests,
        pop_requests = t.pop_requests + EXCLUDED.pop_requests,
        ack_requests = t.ack_requests + EXCLUDED.ack_requests,
        transactions = t.transactions + EXCLUDED.transactions,
        push_messages = t.push_messages + EXCLUDED.push_messages,
        pop_messages = t.pop_messages + EXCLUDED.pop_messages,
        ack_messages = t.ack_messages + EXCLUDED.ack_messages,
        ack_success = t.ack_success + EXCLUDED.ack_success,
        ack_failed = t.ack_failed + EXCLUDED.ack_failed,
        db_errors = t.db_errors + EXCLUDED.db_errors,
        dlq = t.dlq + EXCLUDED.dlq,
        leases_expired = t.leases_expired + EXCLUDED.leases_expired;
END $$;
