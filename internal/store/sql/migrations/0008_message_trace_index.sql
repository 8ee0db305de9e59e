-- queen-go schema, version 8: GET /api/v1/messages?traceId= (docs/api/admin-api.md §2.1,
-- dashboard M10) SHOULD be an index lookup, not a scan of the window. Partial: only messages
-- pushed with a traceId pay for it. A lookup by transactionId needs no index of its own: it
-- probes the (partition_id, transaction_id) key of each matching partition.
CREATE INDEX messages_trace_id ON messages (trace_id) WHERE trace_id IS NOT NULL;
