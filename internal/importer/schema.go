package importer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// queenTables are the tables of Queen v0.15 the import reads, with their columns as Queen's
// lib/schema/schema.sql defines them. A source whose tables differ is another version: the
// import names the difference rather than guess what a column it does not know means.
// Queen's caches and metrics (partition_lookup, stats, messages_consumed, ...) are not read.
var queenTables = map[string][]string{
	"queues": {"id", "name", "namespace", "task", "priority", "lease_time", "retry_limit", "retry_delay",
		"ttl", "dead_letter_queue", "dlq_after_max_retries", "delayed_processing", "window_buffer",
		"retention_seconds", "completed_retention_seconds", "retention_enabled", "encryption_enabled",
		"max_wait_time_seconds", "max_queue_size", "created_at"},
	"partitions": {"id", "queue_id", "name", "created_at", "last_activity"},
	"messages": {"id", "transaction_id", "trace_id", "partition_id", "payload", "created_at",
		"is_encrypted", "producer_sub"},
	"partition_consumers": {"id", "partition_id", "consumer_group", "last_consumed_id",
		"last_consumed_created_at", "total_messages_consumed", "total_batches_consumed", "last_consumed_at",
		"lease_expires_at", "lease_acquired_at", "message_batch", "batch_size", "acked_count", "worker_id",
		"pending_estimate", "last_stats_update", "batch_retry_count", "created_at"},
	"consumer_groups_metadata": {"id", "consumer_group", "queue_name", "partition_name", "namespace", "task",
		"subscription_mode", "subscription_timestamp", "created_at"},
	"dead_letter_queue": {"id", "message_id", "partition_id", "consumer_group", "error_message",
		"retry_count", "original_created_at", "failed_at"},
	"message_traces": {"id", "message_id", "partition_id", "transaction_id", "consumer_group", "event_type",
		"data", "created_at", "worker_id"},
	"message_trace_names": {"trace_id", "trace_name"},
}

// optionalColumns may be present or not in v0.15 databases (added by later schema applies).
var optionalColumns = map[string][]string{
	"queues": {"storage"}, // the per-queue storage engine; only 'rows' can be read
}

// streamsTables are Queen's stream tables (schema queen_streams), read when that schema exists.
var streamsTables = map[string][]string{
	"queries": {"id", "name", "source_queue", "sink_queue", "config_hash", "created_at", "updated_at"},
	"state":   {"query_id", "partition_id", "key", "value", "updated_at"},
}

// sourceShape is what the schema check learnt of the source.
type sourceShape struct {
	streams    bool // the streams schema exists
	hasStorage bool // queues.storage exists
}

// checkSchema compares the source's tables with Queen v0.15's and returns an error naming
// every difference.
func checkSchema(ctx context.Context, conn *pgx.Conn, schema, streamsSchema string) (sourceShape, error) {
	rows, err := conn.Query(ctx, sqlText("source_columns"), []string{schema, streamsSchema})
	if err != nil {
		return sourceShape{}, fmt.Errorf("source: %w", err)
	}
	have := map[string][]string{} // "schema.table" -> columns
	for rows.Next() {
		var s, t, c string
		if err := rows.Scan(&s, &t, &c); err != nil {
			return sourceShape{}, fmt.Errorf("source: %w", err)
		}
		have[s+"."+t] = append(have[s+"."+t], c)
	}
	if err := rows.Err(); err != nil {
		return sourceShape{}, fmt.Errorf("source: %w", err)
	}
	var shape sourceShape
	var diffs []string
	if !hasPrefix(have, schema+".") {
		return shape, fmt.Errorf("%w: the source database has no schema %q with tables (is --from a Queen database, and --schema its schema?)", ErrRefused, schema)
	}
	diffs = append(diffs, compareTables(have, schema, queenTables, optionalColumns)...)
	if hasPrefix(have, streamsSchema+".") {
		shape.streams = true
		diffs = append(diffs, compareTables(have, streamsSchema, streamsTables, nil)...)
	}
	if len(diffs) > 0 {
		return shape, fmt.Errorf("%w: the source schema is not the Queen v0.15 schema this importer reads:\n  %s",
			ErrRefused, strings.Join(diffs, "\n  "))
	}
	shape.hasStorage = slices.Contains(have[schema+".queues"], "storage")
	return shape, nil
}

func hasPrefix(m map[string][]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// compareTables lists, for each expected table, a missing table, missing columns and columns
// it does not know, in a stable order.
func compareTables(have map[string][]string, schema string, want, optional map[string][]string) []string {
	var diffs []string
	names := make([]string, 0, len(want))
	for t := range want {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		cols, ok := have[schema+"."+t]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("table %s.%s is missing", schema, t))
			continue
		}
		for _, c := range want[t] {
			if !slices.Contains(cols, c) {
				diffs = append(diffs, fmt.Sprintf("table %s.%s has no column %s", schema, t, c))
			}
		}
		for _, c := range cols {
			if !slices.Contains(want[t], c) && !slices.Contains(optional[t], c) {
				diffs = append(diffs, fmt.Sprintf("table %s.%s has a column this importer does not know: %s", schema, t, c))
			}
		}
	}
	return diffs
}
