package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// PopRequest selects what a pop may claim (docs/api/data-api.md §3). Queue, Partition, Namespace and
// Task are filters; empty means "any".
type PopRequest struct {
	Queue, Partition  string
	Namespace, Task   string
	Group             string
	Batch, Partitions int
	AutoAck           bool
	LeaseID           string     // minted by the caller; ignored with AutoAck
	SubscriptionMode  string     // all | new | timestamp (registration of a named group)
	SubscriptionFrom  *time.Time // with mode timestamp
}

const sqlPop = `SELECT id::text, transaction_id, trace_id::text, payload, producer_sub, created_at,
	partition_id::text, partition_name, queue_name, retry_count, encrypted
	FROM qg_pop(p_queue => $1, p_partition => $2, p_namespace => $3, p_task => $4, p_group => $5,
		p_batch => $6, p_max_partitions => $7, p_auto_ack => $8, p_lease_id => $9::uuid,
		p_sub_mode => $10, p_sub_ts => $11, p_now => $12)`

// popArgs are the parameters of qg_pop (see sqlCall).
type popArgs struct {
	Queue, Partition, Namespace, Task any // filters, nil: any
	Group                             string
	Batch, MaxPartitions              int
	AutoAck                           bool
	LeaseID                           any // nil with AutoAck
	SubMode                           string
	SubTS                             *time.Time
	Now                               any
}

func (a popArgs) args() []any {
	return []any{a.Queue, a.Partition, a.Namespace, a.Task, a.Group, a.Batch, a.MaxPartitions, a.AutoAck,
		a.LeaseID, a.SubMode, a.SubTS, a.Now}
}

// Pop claims and returns deliverable messages; none is not an error.
func (s *Store) Pop(ctx context.Context, r PopRequest) ([]mq.Message, error) {
	var lease any
	if !r.AutoAck {
		lease = r.LeaseID
	}
	args := popArgs{Queue: nullIfEmpty(r.Queue), Partition: nullIfEmpty(r.Partition), Namespace: nullIfEmpty(r.Namespace),
		Task: nullIfEmpty(r.Task), Group: r.Group, Batch: r.Batch, MaxPartitions: r.Partitions, AutoAck: r.AutoAck,
		LeaseID: lease, SubMode: r.SubscriptionMode, SubTS: r.SubscriptionFrom, Now: s.nowArg()}.args()
	var out []mq.Message
	run := func() error {
		out = out[:0]
		return s.queryRows(ctx, sqlPop, args, func(row rowScanner) error {
			var m mq.Message
			var payload string
			if err := row.Scan(&m.ID, &m.TransactionID, &m.TraceID, &payload, &m.ProducerSub, &m.CreatedAt,
				&m.PartitionID, &m.Partition, &m.Queue, &m.RetryCount, &m.Encrypted); err != nil {
				return err
			}
			m.Payload = []byte(payload)
			out = append(out, m)
			return nil
		})
	}
	// A pop's first claims insert consumer rows in the walk's order, which a concurrent queue
	// deletion (locking partitions by id) can cross. PostgreSQL then aborts one of them; an
	// aborted pop has changed nothing, so it simply runs again. A deletion that commits while
	// the pop registers its group or inserts a consumer row makes that insert fail its foreign
	// key: the queue is gone, so the pop, run again, finds nothing (and if it keeps meeting
	// deletions, it answers empty: nothing was deliverable from a queue being deleted).
	err := run()
	for i := 1; i < 3 && (pgCode(err) == codeDeadlock || pgCode(err) == codeForeignKey); i++ {
		err = run()
	}
	if pgCode(err) == codeForeignKey {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pop: %w", err)
	}
	return out, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
