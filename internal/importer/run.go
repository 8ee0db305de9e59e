package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// run is one import in progress.
type run struct {
	o      Options
	src    pgx.Tx // the source snapshot
	tgt    *pgxpool.Pool
	plan   *plan
	report *Report
	rows   atomic.Int64 // rows moved so far, for the progress display
	start  time.Time
}

func (r *run) elapsed() time.Duration { return time.Since(r.start) }

func (r *run) importAll(ctx context.Context) error {
	r.start = time.Now()
	var total int64
	for _, q := range r.plan.queues {
		if !q.done {
			for _, n := range q.counts {
				total += n
			}
		}
	}
	if r.plan.streams != nil && !r.plan.streamsDone {
		total += int64(len(r.plan.streams) + len(r.plan.state))
	}
	stop := startProgress(r.o.Progress, r.o.Terminal, &r.rows, total, r.start)
	defer stop()
	for _, q := range r.plan.queues {
		if q.done {
			continue
		}
		if err := r.importQueue(ctx, q); err != nil {
			return fmt.Errorf("queue %q: %w", q.name, err)
		}
		r.hook("imported", q.name)
	}
	if r.plan.streams != nil && !r.plan.streamsDone {
		if err := r.importStreams(ctx); err != nil {
			return fmt.Errorf("stream queries: %w", err)
		}
	}
	return nil
}

func (r *run) hook(step, queue string) {
	if r.o.hook != nil {
		r.o.hook(step, queue)
	}
}

// inTx runs f in one target transaction after claiming the item (target_claim.sql): f runs
// only when the item is free; a done item is skipped, a taken one refused.
func (r *run) inTx(ctx context.Context, itemKind, name string, f func(pgx.Tx) error) (skipped bool, err error) {
	tx, err := r.tgt.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.Background())
	// The rows are worth nothing until the import's own row commits with them: a crash of the
	// database before the WAL is flushed loses both, and the next run imports the item again.
	if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
		return false, err
	}
	var state string
	if err := tx.QueryRow(ctx, sqlText("target_claim"), itemKind, name).Scan(nil, &state); err != nil {
		return false, err
	}
	switch state {
	case "done":
		return true, nil
	case "taken":
		return false, fmt.Errorf("%w: the target has a queue %q that no import made (created meanwhile?)", ErrRefused, name)
	}
	if err := f(tx); err != nil {
		return false, err
	}
	return false, tx.Commit(ctx)
}

func (r *run) importQueue(ctx context.Context, q *queuePlan) error {
	var wrote [nKinds]int64
	skipped, err := r.inTx(ctx, "queue", q.name, func(tx pgx.Tx) error {
		args := append([]any{q.id, q.name, q.namespace, q.task}, q.values...)
		if _, err := tx.Exec(ctx, sqlText("target_queue"), append(args, q.createdAt)...); err != nil {
			return fmt.Errorf("write queue: %w", err)
		}
		wrote[kQueues] = 1
		r.rows.Add(1)
		n, err := r.copyPartitions(ctx, tx, q)
		if err != nil {
			return err
		}
		wrote[kPartitions] = n
		lit := "'" + q.id + "'::uuid" // a uuid read from the source: no quoting needed beyond this
		if wrote[kMessages], err = r.pipe(ctx, tx, sqlText("source_messages", "queue", lit),
			"COPY messages (partition_id, position, id, transaction_id, payload, trace_id, producer_sub, encrypted, created_at) FROM STDIN"); err != nil {
			return fmt.Errorf("copy messages: %w", err)
		}
		r.hook("copied messages", q.name)
		if _, err := tx.Exec(ctx, sqlText("target_heads"), q.id); err != nil {
			return fmt.Errorf("partition heads: %w", err)
		}
		if wrote[kSubscriptions], wrote[kPositions], err = r.copyGroups(ctx, tx, q); err != nil {
			return err
		}
		// Queen has no subscription table of its own for mode all and queue mode: what was
		// read is the registrations derived from its positions and metadata.
		q.counts[kSubscriptions] = wrote[kSubscriptions]
		if _, err := tx.Exec(ctx, sqlText("target_work"), q.id); err != nil {
			return fmt.Errorf("pop index: %w", err)
		}
		if wrote[kDeadLetters], err = r.pipe(ctx, tx, sqlText("source_dlq", "queue", lit),
			"COPY dlq (id, queue_id, partition_id, queue_name, partition_name, consumer_group, message_id, transaction_id, error_message, retry_count, payload, trace_id, producer_sub, encrypted, created_at, failed_at) FROM STDIN"); err != nil {
			return fmt.Errorf("copy dead letters: %w", err)
		}
		if wrote[kTraces], err = r.pipe(ctx, tx, sqlText("source_traces", "queue", lit),
			"COPY traces (id, partition_id, transaction_id, consumer_group, event_type, data, worker_id, trace_names, created_at) FROM STDIN"); err != nil {
			return fmt.Errorf("copy traces: %w", err)
		}
		if wrote[kTraceNames], err = r.pipe(ctx, tx, sqlText("source_trace_names", "queue", lit),
			"COPY trace_names (trace_id, trace_name, partition_id, transaction_id, created_at) FROM STDIN"); err != nil {
			return fmt.Errorf("copy trace names: %w", err)
		}
		return r.markDone(ctx, tx, "queue", q.name, wrote)
	})
	if err != nil {
		return err
	}
	if !skipped {
		r.report.add(q.counts, wrote)
	}
	return nil
}

// markDone records the item with what was written for it.
func (r *run) markDone(ctx context.Context, tx pgx.Tx, itemKind, name string, wrote [nKinds]int64) error {
	counts := map[string]int64{}
	for k, n := range wrote {
		if n > 0 {
			counts[kindNames[k]] = n
		}
	}
	b, _ := json.Marshal(counts)
	if _, err := tx.Exec(ctx, sqlText("target_done"), itemKind, name, r.plan.sourceName, string(b)); err != nil {
		return fmt.Errorf("record the import: %w", err)
	}
	return nil
}

func (r *run) copyPartitions(ctx context.Context, tx pgx.Tx, q *queuePlan) (int64, error) {
	rows, err := r.src.Query(ctx, sqlText("source_partitions"), q.id)
	if err != nil {
		return 0, fmt.Errorf("read partitions: %w", err)
	}
	var parts, heads [][]any
	for rows.Next() {
		var id, name string
		var created, active time.Time
		if err := rows.Scan(&id, &name, &created, &active); err != nil {
			return 0, fmt.Errorf("read partitions: %w", err)
		}
		parts = append(parts, []any{id, q.id, name, created})
		heads = append(heads, []any{id, int64(0), active})
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read partitions: %w", err)
	}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"partitions"}, []string{"id", "queue_id", "name", "created_at"}, pgx.CopyFromRows(parts))
	if err != nil {
		return 0, fmt.Errorf("write partitions: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"partition_heads"}, []string{"partition_id", "last_position", "last_activity_at"}, pgx.CopyFromRows(heads)); err != nil {
		return 0, fmt.Errorf("write partition heads: %w", err)
	}
	r.rows.Add(n)
	return n, nil
}

// copyGroups writes the queue's subscriptions and its groups' positions.
func (r *run) copyGroups(ctx context.Context, tx pgx.Tx, q *queuePlan) (subs, positions int64, err error) {
	rows, err := r.src.Query(ctx, sqlText("source_subscriptions"), q.id)
	if err != nil {
		return 0, 0, fmt.Errorf("read subscriptions: %w", err)
	}
	var subRows [][]any
	var placed []string
	var placedTS, placedAt []time.Time
	for rows.Next() {
		var group, mode string
		var ts *time.Time
		var created time.Time
		if err := rows.Scan(&group, &mode, &ts, &created); err != nil {
			return 0, 0, fmt.Errorf("read subscriptions: %w", err)
		}
		subRows = append(subRows, []any{q.id, group, mode, ts, created})
		if ts != nil {
			placed, placedTS, placedAt = append(placed, group), append(placedTS, *ts), append(placedAt, created)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("read subscriptions: %w", err)
	}
	if subs, err = tx.CopyFrom(ctx, pgx.Identifier{"subscriptions"},
		[]string{"queue_id", "consumer_group", "mode", "subscription_timestamp", "created_at"}, pgx.CopyFromRows(subRows)); err != nil {
		return 0, 0, fmt.Errorf("write subscriptions: %w", err)
	}
	rows, err = r.src.Query(ctx, sqlText("source_consumers"), q.id, placed, placedTS, placedAt)
	if err != nil {
		return 0, 0, fmt.Errorf("read positions: %w", err)
	}
	var cons [][]any
	for rows.Next() {
		var pid, group string
		var cursor, msgs, batches int64
		var last *time.Time
		var created time.Time
		if err := rows.Scan(&pid, &group, &cursor, &msgs, &batches, &last, &created); err != nil {
			return 0, 0, fmt.Errorf("read positions: %w", err)
		}
		cons = append(cons, []any{pid, group, q.id, cursor, msgs, batches, last, created})
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("read positions: %w", err)
	}
	if positions, err = tx.CopyFrom(ctx, pgx.Identifier{"consumers"},
		[]string{"partition_id", "consumer_group", "queue_id", "cursor", "messages_consumed", "batches_consumed", "last_consumed_at", "created_at"},
		pgx.CopyFromRows(cons)); err != nil {
		return 0, 0, fmt.Errorf("write positions: %w", err)
	}
	r.rows.Add(subs + positions)
	return subs, positions, nil
}

// importStreams writes Queen's stream queries and their state. A state row whose partition
// was not imported (Queen keeps no foreign key there: its partition may be gone) has no shard
// to join and is left out, counted as read but not written.
func (r *run) importStreams(ctx context.Context) error {
	var wrote [nKinds]int64
	skipped, err := r.inTx(ctx, "streams", "", func(tx pgx.Tx) error {
		var qs [][]any
		for _, s := range r.plan.streams {
			qs = append(qs, []any{s.id, "", s.name, s.source, s.sink, s.hash, s.created, s.updated})
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"stream_queries"},
			[]string{"id", "tenant", "name", "source_queue", "sink_queue", "config_hash", "created_at", "updated_at"}, pgx.CopyFromRows(qs))
		if err != nil {
			return fmt.Errorf("write stream queries: %w", err)
		}
		wrote[kStreamQueries] = n
		var pids []string
		for _, s := range r.plan.state {
			pids = append(pids, s.partition)
		}
		rows, err := tx.Query(ctx, sqlText("target_partition_ids"), pids)
		if err != nil {
			return err
		}
		exists := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			exists[id] = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var shards, state [][]any
		seen := map[[2]string]bool{}
		for _, s := range r.plan.state {
			if !exists[s.partition] {
				continue
			}
			if k := [2]string{s.query, s.partition}; !seen[k] {
				seen[k] = true
				shards = append(shards, []any{s.query, s.partition})
			}
			state = append(state, []any{s.query, s.partition, s.key, s.value, s.updated})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stream_shards"}, []string{"query_id", "partition_id"}, pgx.CopyFromRows(shards)); err != nil {
			return fmt.Errorf("write stream shards: %w", err)
		}
		if wrote[kStreamState], err = tx.CopyFrom(ctx, pgx.Identifier{"stream_state"},
			[]string{"query_id", "partition_id", "key", "value", "updated_at"}, pgx.CopyFromRows(state)); err != nil {
			return fmt.Errorf("write stream state: %w", err)
		}
		r.rows.Add(int64(len(r.plan.streams) + len(r.plan.state)))
		return r.markDone(ctx, tx, "streams", "", wrote)
	})
	if err == nil && !skipped {
		var read [nKinds]int64
		read[kStreamQueries], read[kStreamState] = int64(len(r.plan.streams)), int64(len(r.plan.state))
		r.report.add(read, wrote)
	}
	return err
}

// pipe streams the rows of the source's COPY TO (srcSQL) into the target's COPY FROM
// (dstSQL) in COPY text format, which both ends share column for column, and returns the rows
// written. Rows are counted by their line ends for the progress display: the text format
// escapes newlines inside values, so every raw newline ends a row.
func (r *run) pipe(ctx context.Context, tx pgx.Tx, srcSQL, dstSQL string) (int64, error) {
	pr, pw := io.Pipe()
	srcErr := make(chan error, 1)
	go func() {
		_, err := r.src.Conn().PgConn().CopyTo(ctx, pw, srcSQL)
		pw.CloseWithError(err) // nil: the reader sees EOF
		srcErr <- err
	}()
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, &lineCounter{r: pr, n: &r.rows}, dstSQL)
	if err != nil {
		pr.CloseWithError(err) // unblocks the source's writer
	}
	if e := <-srcErr; e != nil && err == nil {
		err = fmt.Errorf("source: %w", e)
	} else if e != nil && !errors.Is(e, io.ErrClosedPipe) {
		err = fmt.Errorf("%w (source: %v)", err, e)
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// lineCounter counts the newlines of what passes through it.
type lineCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	}
	return n, err
}
