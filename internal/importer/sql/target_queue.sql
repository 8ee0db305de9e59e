-- One imported queue with its options (already mapped and defaulted).
INSERT INTO queues (id, name, namespace, task, lease_time, retry_limit, retry_delay, priority, max_size,
                    ttl, dead_letter_queue, dlq_after_max_retries, delayed_processing, window_buffer,
                    retention_seconds, completed_retention_seconds, retention_enabled,
                    encryption_enabled, max_wait_time_seconds, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $20);
