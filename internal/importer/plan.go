package importer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// option maps one of Queen's queue columns to queen-go's.
type option struct {
	queen, api, target string // Queen's column, the API's name, queen-go's column
	def                int32  // queen-go's default (booleans: 0 or 1)
	boolean            bool
}

// options lists every option column of Queen's queues table in the order of queen-go's
// INSERT (target_queue.sql). Each one has a queen-go column with the same meaning; a value
// Queen left NULL takes queen-go's default and is reported.
var options = []option{
	{"lease_time", "leaseTime", "lease_time", 300, false},
	{"retry_limit", "retryLimit", "retry_limit", 3, false},
	{"retry_delay", "retryDelay", "retry_delay", 1000, false},
	{"priority", "priority", "priority", 0, false},
	{"max_queue_size", "maxSize", "max_size", 0, false},
	{"ttl", "ttl", "ttl", 3600, false},
	{"dead_letter_queue", "deadLetterQueue", "dead_letter_queue", 0, true},
	{"dlq_after_max_retries", "dlqAfterMaxRetries", "dlq_after_max_retries", 0, true},
	{"delayed_processing", "delayedProcessing", "delayed_processing", 0, false},
	{"window_buffer", "windowBuffer", "window_buffer", 0, false},
	{"retention_seconds", "retentionSeconds", "retention_seconds", 0, false},
	{"completed_retention_seconds", "completedRetentionSeconds", "completed_retention_seconds", 0, false},
	{"retention_enabled", "retentionEnabled", "retention_enabled", 0, true},
	{"encryption_enabled", "encryptionEnabled", "encryption_enabled", 0, true},
	{"max_wait_time_seconds", "maxWaitTimeSeconds", "max_wait_time_seconds", 0, false},
}

// kind is one sort of row the import reads and writes.
type kind int

const (
	kQueues kind = iota
	kPartitions
	kMessages
	kPositions
	kSubscriptions
	kDeadLetters
	kTraces
	kTraceNames
	kStreamQueries
	kStreamState
	nKinds
)

var kindNames = [nKinds]string{"queues", "partitions", "messages", "group positions", "subscriptions",
	"dead letters", "traces", "trace names", "stream queries", "stream state"}

// queuePlan is one source queue.
type queuePlan struct {
	id, name, namespace, task string
	values                    []any // per options entry: int32 or bool, defaults applied
	nulls                     []string
	storage                   string
	createdAt                 time.Time
	counts                    [nKinds]int64 // read from the source
	done                      bool          // imported by an earlier run
	taken                     bool          // a target queue of this name the import did not make
}

// streamQuery is one of Queen's stream queries.
type streamQuery struct {
	id, name, source string
	sink             *string
	hash             string
	created, updated time.Time
}

// streamRow is one stream state row.
type streamRow struct {
	query, partition, key, value string
	updated                      time.Time
}

// plan is what a run will do.
type plan struct {
	sourceName   string
	queues       []*queuePlan
	streams      []streamQuery // nil without Queen's streams schema
	state        []streamRow
	streamsDone  bool
	streamsTaken []string
}

func readPlan(ctx context.Context, tx pgx.Tx, o Options, shape sourceShape) (*plan, error) {
	p := &plan{}
	if err := tx.QueryRow(ctx, "SELECT current_database()").Scan(&p.sourceName); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	p.sourceName += "/" + o.SourceSchema
	storage := "'rows'"
	if shape.hasStorage {
		storage = "q.storage"
	}
	rows, err := tx.Query(ctx, sqlText("source_queues", "storage", storage))
	if err != nil {
		return nil, fmt.Errorf("source: read queues: %w", err)
	}
	for rows.Next() {
		q := &queuePlan{}
		ints := make([]*int32, len(options))
		bools := make([]*bool, len(options))
		dest := []any{&q.id, &q.name, &q.namespace, &q.task}
		for i, op := range options {
			if op.boolean {
				dest = append(dest, &bools[i])
			} else {
				dest = append(dest, &ints[i])
			}
		}
		var nParts, nMsgs, nPos, nDLQ, nTraces, nNames int64
		dest = append(dest, &q.storage, &q.createdAt, &nParts, &nMsgs, &nPos, &nDLQ, &nTraces, &nNames)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("source: read queues: %w", err)
		}
		for i, op := range options {
			switch {
			case op.boolean && bools[i] != nil:
				q.values = append(q.values, *bools[i])
			case op.boolean:
				q.values = append(q.values, op.def != 0)
				q.nulls = append(q.nulls, op.api)
			case ints[i] != nil:
				q.values = append(q.values, *ints[i])
			default:
				q.values = append(q.values, op.def)
				q.nulls = append(q.nulls, op.api)
			}
		}
		q.counts[kQueues] = 1
		q.counts[kPartitions], q.counts[kMessages], q.counts[kPositions] = nParts, nMsgs, nPos
		q.counts[kDeadLetters], q.counts[kTraces], q.counts[kTraceNames] = nDLQ, nTraces, nNames
		p.queues = append(p.queues, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("source: read queues: %w", err)
	}
	if shape.streams {
		if err := p.readStreams(ctx, tx, o); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *plan) readStreams(ctx context.Context, tx pgx.Tx, o Options) error {
	streams := pgx.Identifier{o.StreamsSchema}.Sanitize()
	rows, err := tx.Query(ctx, sqlText("source_streams", "streams", streams))
	if err != nil {
		return fmt.Errorf("source: read stream queries: %w", err)
	}
	p.streams = []streamQuery{}
	for rows.Next() {
		var s streamQuery
		if err := rows.Scan(&s.id, &s.name, &s.source, &s.sink, &s.hash, &s.created, &s.updated); err != nil {
			return fmt.Errorf("source: read stream queries: %w", err)
		}
		p.streams = append(p.streams, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("source: read stream queries: %w", err)
	}
	rows, err = tx.Query(ctx, sqlText("source_stream_state", "streams", streams))
	if err != nil {
		return fmt.Errorf("source: read stream state: %w", err)
	}
	for rows.Next() {
		var s streamRow
		if err := rows.Scan(&s.query, &s.partition, &s.key, &s.value, &s.updated); err != nil {
			return fmt.Errorf("source: read stream state: %w", err)
		}
		p.state = append(p.state, s)
	}
	return rows.Err()
}

// readTarget learns which source queues and stream queries the target already holds, and
// which of those an earlier run imported. A target without queen-go's schema holds none.
func (p *plan) readTarget(ctx context.Context, tgt *pgxpool.Pool, schema string) error {
	var migrated bool
	err := tgt.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
		pgx.Identifier{schema, "queues"}.Sanitize(), pgx.Identifier{schema, "queen_import"}.Sanitize()).Scan(&migrated)
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	if !migrated {
		return nil
	}
	var queueNames, streamNames []string
	byName := map[string]*queuePlan{}
	for _, q := range p.queues {
		queueNames = append(queueNames, q.name)
		byName[q.name] = q
	}
	for _, s := range p.streams {
		streamNames = append(streamNames, s.name)
	}
	rows, err := tgt.Query(ctx, sqlText("target_state"), queueNames, streamNames)
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, name string
		var imported bool
		if err := rows.Scan(&k, &name, &imported); err != nil {
			return fmt.Errorf("target database: %w", err)
		}
		switch k {
		case "queue":
			byName[name].done, byName[name].taken = imported, !imported
		case "stream":
			if !imported {
				p.streamsTaken = append(p.streamsTaken, name)
			}
		case "streams":
			p.streamsDone = true
		}
	}
	return rows.Err()
}

// refusal is the error that stops a run before it writes anything.
func (p *plan) refusal() error {
	var why []string
	for _, q := range p.queues {
		if q.taken {
			why = append(why, fmt.Sprintf("the target already has a queue %q that no earlier import made", q.name))
		}
		if q.storage != "rows" && !q.done {
			why = append(why, fmt.Sprintf("queue %q: option storage=%s cannot be honoured: its messages are in Queen's segment store, which this importer does not read (move the queue back to storage 'rows' in Queen first)", q.name, q.storage))
		}
	}
	if !p.streamsDone {
		for _, n := range p.streamsTaken {
			why = append(why, fmt.Sprintf("the target already has a stream query %q that no earlier import made", n))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w (nothing was written):\n  %s", ErrRefused, strings.Join(why, "\n  "))
}

func (p *plan) nothingToDo() bool {
	for _, q := range p.queues {
		if !q.done {
			return false
		}
	}
	return p.streams == nil || p.streamsDone
}

// printPlan writes the source's counts and every queue's option mapping.
func (p *plan) printPlan(w io.Writer, dryRun bool) {
	fmt.Fprintf(w, "Source %s: %d queues", p.sourceName, len(p.queues))
	if p.streams != nil {
		fmt.Fprintf(w, ", %d stream queries", len(p.streams))
	}
	fmt.Fprintln(w)
	if !dryRun {
		for _, q := range p.queues {
			if q.done {
				fmt.Fprintf(w, "  queue %s: imported by an earlier run, skipped\n", q.name)
			}
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nqueue\tstate\tpartitions\tmessages\tgroup positions\tdead letters\ttraces")
	for _, q := range p.queues {
		state := "to import"
		switch {
		case q.done:
			state = "imported earlier"
		case q.taken:
			state = "REFUSED: name taken"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", q.name, state, q.counts[kPartitions], q.counts[kMessages],
			q.counts[kPositions], q.counts[kDeadLetters], q.counts[kTraces])
	}
	tw.Flush()
	fmt.Fprintln(w, "\nOption mapping (Queen column -> queen-go option):")
	for _, op := range options {
		fmt.Fprintf(w, "  %s -> %s\n", op.queen, op.api)
	}
	fmt.Fprintln(w, "  namespace, task -> namespace, task (NULL -> \"\")")
	fmt.Fprintln(w, "  (none) -> dedupWindowSeconds: queen-go's default, 900; Queen keeps a key only while its message is stored")
	fmt.Fprintln(w, "\nOptions per queue:")
	for _, q := range p.queues {
		var parts []string
		for i, op := range options {
			parts = append(parts, fmt.Sprintf("%s=%v", op.api, q.values[i]))
		}
		fmt.Fprintf(w, "  %s (namespace %q, task %q): %s\n", q.name, q.namespace, q.task, strings.Join(parts, " "))
		for _, n := range q.notes() {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	if p.streams != nil {
		fmt.Fprintf(w, "\nStream queries: %d, state rows: %d\n", len(p.streams), len(p.state))
	}
	fmt.Fprintln(w, "\nDry run: nothing was written.")
}

// notes are the remarks on a queue's options: defaults filled in, and what needs the
// operator's attention.
func (q *queuePlan) notes() []string {
	var out []string
	if len(q.nulls) > 0 {
		slices.Sort(q.nulls)
		out = append(out, "NULL in Queen, queen-go's default used: "+strings.Join(q.nulls, ", "))
	}
	if q.storage != "rows" {
		out = append(out, fmt.Sprintf("storage=%s cannot be honoured: queen-go has one storage engine and this importer reads only Queen's row storage", q.storage))
	}
	for i, op := range options {
		if op.api == "encryptionEnabled" && q.values[i] == true {
			out = append(out, "encryptionEnabled: payloads are copied sealed; start queen-go with Queen's QUEEN_ENCRYPTION_KEY")
		}
	}
	return out
}
