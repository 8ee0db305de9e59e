package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// Requeue from the DLQ in copy mode (docs/api/admin-api.md §3.2; sql/functions/082_dlq_copy.sql).

// DLQCopySource is a DLQ entry a copy is built from: its payload copy as stored and the
// partition it was dead-lettered in (the default target partition).
type DLQCopySource struct {
	ID, Partition string
	Payload       []byte
	Encrypted     bool
	TraceID       *string
}

// dlqCopySourceRow is a row of qg_dlq_copy_sources.
type dlqCopySourceRow struct {
	ID        string  `db:"id"`
	Partition string  `db:"partition_name"`
	Payload   *string `db:"payload"`
	Encrypted bool    `db:"encrypted"`
	TraceID   *string `db:"trace_id"`
}

var dlqCopySourceRows = callOf[dlqCopySourceRow](sqlDLQCopySources)

const sqlDLQCopySources = `SELECT id, partition_name, payload, encrypted, trace_id FROM qg_dlq_copy_sources(
	p_ids => $1::uuid[], p_queue => $2, p_group => $3, p_partition => $4, p_error => $5, p_from => $6, p_to => $7,
	p_limit => $8)`

// dlqCopySourcesArgs are the parameters of qg_dlq_copy_sources (see sqlCall).
type dlqCopySourcesArgs struct {
	IDs any // nil: by filter
	dlqMatchArgs
	Limit int
}

func (a dlqCopySourcesArgs) args() []any {
	return append(append([]any{a.IDs}, a.dlqMatchArgs.args()...), a.Limit)
}

// DLQCopySources reads the entries a copy acts on: those of ids that exist (sel.IDs, canonical
// UUIDs), or up to sel.Limit entries matching sel.Filter, oldest failedAt first.
func (s *Store) DLQCopySources(ctx context.Context, sel mq.DLQSelection) ([]DLQCopySource, error) {
	args := dlqCopySourcesArgs{IDs: uuidParam(sel.IDs), Limit: sel.Limit}
	if sel.Filter != nil {
		args.IDs, args.dlqMatchArgs = nil, dlqMatch(*sel.Filter)
	}
	out, err := collect(ctx, s, dlqCopySourceRows, args.args(), func(r dlqCopySourceRow) DLQCopySource {
		return DLQCopySource{ID: r.ID, Partition: r.Partition, Payload: jsonText(r.Payload), Encrypted: r.Encrypted,
			TraceID: r.TraceID}
	})
	if err != nil {
		return nil, fmt.Errorf("read dlq entries: %w", err)
	}
	return out, nil
}

// DLQCopy is one copy to write: the entry it comes from and the new message.
type DLQCopy struct {
	DLQID            string
	Queue, Partition string
	ID               string // the new message id, also its key
	Payload          []byte
	Encrypted        bool
	TraceID          *string
	ProducerSub      *string
}

// dlqCopyRow is a row of qg_dlq_copy: an entry's outcome, its copy's partition and queue when
// it was queued.
type dlqCopyRow struct {
	DLQID       string  `db:"dlq_id"`
	Status      string  `db:"status"`
	PartitionID *string `db:"partition_id"`
	Queue       *string `db:"queue_name"`
}

var dlqCopyRows = callOf[dlqCopyRow](sqlDLQCopy)

const sqlDLQCopy = `SELECT dlq_id, status, partition_id, queue_name FROM qg_dlq_copy(p_dlq_ids => $1::uuid[],
	p_queues => $2, p_partitions => $3, p_ids => $4::uuid[], p_payloads => $5, p_encrypted => $6,
	p_traces => $7::uuid[], p_subs => $8, p_now => $9)`

// dlqCopyArgs are the parameters of qg_dlq_copy (see sqlCall).
type dlqCopyArgs struct {
	DLQIDs, Queues, Partitions, IDs, Payloads []string
	Encrypted                                 []bool
	Traces, Subs                              []*string
	Now                                       any
}

func (a dlqCopyArgs) args() []any {
	return []any{a.DLQIDs, a.Queues, a.Partitions, a.IDs, a.Payloads, a.Encrypted, a.Traces, a.Subs, a.Now}
}

// CopyDLQEntries writes the copies and removes each entry whose copy was written, in one
// transaction (target queues and partitions that do not exist are created first, in their own
// step, as a push creates them). Entries gone meanwhile are left out of the answer; a target
// at its maxSize gives the entry mq.ReasonQueueFull.
func (s *Store) CopyDLQEntries(ctx context.Context, copies []DLQCopy) (written []mq.DLQCopy, skipped []mq.DLQSkip, err error) {
	ctx = budget.Ensure(ctx)
	var a dlqCopyArgs
	byID := make(map[string]DLQCopy, len(copies))
	for _, c := range copies {
		byID[c.DLQID] = c
		a.DLQIDs = append(a.DLQIDs, c.DLQID)
		a.Queues = append(a.Queues, c.Queue)
		a.Partitions = append(a.Partitions, c.Partition)
		a.IDs = append(a.IDs, c.ID)
		a.Payloads = append(a.Payloads, string(c.Payload))
		a.Encrypted = append(a.Encrypted, c.Encrypted)
		a.Traces = append(a.Traces, c.TraceID)
		a.Subs = append(a.Subs, c.ProducerSub)
	}
	a.Now = s.nowArg()
	run := func() error {
		written, skipped = written[:0], skipped[:0]
		return s.queryRows(ctx, sqlDLQCopy, a.args(), func(r rowScanner) error {
			row, err := dlqCopyRows.row(r)
			if err != nil {
				return err
			}
			if row.Status != "queued" {
				skipped = append(skipped, mq.DLQSkip{ID: row.DLQID, Reason: mq.ReasonQueueFull})
				return nil
			}
			c := byID[row.DLQID]
			written = append(written, mq.DLQCopy{DLQID: row.DLQID, MessageID: c.ID, TransactionID: c.ID,
				QueueName: *row.Queue, PartitionID: *row.PartitionID})
			return nil
		})
	}
	if err = s.runCreating(ctx, a.Queues, a.Partitions, run); err != nil {
		return nil, nil, fmt.Errorf("copy dlq entries: %w", err)
	}
	return written, skipped, nil
}

// DLQMatchingCount counts the entries matching f.
func (s *Store) DLQMatchingCount(ctx context.Context, f mq.DLQFilter) (n int64, err error) {
	if _, err = s.queryOne(ctx, sqlDLQCount, dlqMatch(f).args(), &n); err != nil {
		return 0, fmt.Errorf("count dlq entries: %w", err)
	}
	return n, nil
}
