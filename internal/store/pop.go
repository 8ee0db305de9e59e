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

// popRow is a row of qg_pop: a message claimed for request req (1-based).
type popRow struct {
	Req           int32     `db:"req"`
	ID            string    `db:"id"`
	TransactionID string    `db:"transaction_id"`
	TraceID       *string   `db:"trace_id"`
	Payload       string    `db:"payload"`
	ProducerSub   *string   `db:"producer_sub"`
	CreatedAt     time.Time `db:"created_at"`
	PartitionID   string    `db:"partition_id"`
	Partition     string    `db:"partition_name"`
	Queue         string    `db:"queue_name"`
	RetryCount    int       `db:"retry_count"`
	Encrypted     bool      `db:"encrypted"`
}

var popRows = callOf[popRow](sqlPop)

const sqlPop = `SELECT req, id::text AS id, transaction_id, trace_id::text AS trace_id, payload, producer_sub, created_at,
	partition_id::text AS partition_id, partition_name, queue_name, retry_count, encrypted
	FROM qg_pop(p_queue => $1, p_partition => $2, p_namespace => $3, p_task => $4, p_group => $5,
		p_batches => $6, p_max_partitions => $7, p_auto_ack => $8, p_lease_ids => $9::uuid[],
		p_sub_mode => $10, p_sub_ts => $11, p_now => $12)`

// popArgs are the parameters of qg_pop (see sqlCall).
type popArgs struct {
	Queue, Partition, Namespace, Task any // filters, nil: any
	Group                             string
	Batches                           []int32 // per request
	MaxPartitions                     int
	AutoAck                           bool
	LeaseIDs                          []*string // per request; nil with AutoAck
	SubMode                           string
	SubTS                             *time.Time
	Now                               any
}

func (a popArgs) args() []any {
	return []any{a.Queue, a.Partition, a.Namespace, a.Task, a.Group, a.Batches, a.MaxPartitions, a.AutoAck,
		uuidParam(a.LeaseIDs), a.SubMode, a.SubTS, a.Now}
}

// Pop claims and returns deliverable messages; none is not an error.
func (s *Store) Pop(ctx context.Context, r PopRequest) ([]mq.Message, error) {
	out, err := s.PopMany(ctx, r, []PopShare{{Batch: r.Batch, LeaseID: r.LeaseID}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PopShare is one request of a merged pop: its batch size and lease.
type PopShare struct {
	Batch   int
	LeaseID string // ignored with AutoAck
}

// PopMany serves several pops of the same target, group and options (r; its Batch and LeaseID
// are ignored) in one call: one walk of the work index claims pairs for shares[0] first, then
// for shares[1] from the rest of the walk, and so on (qg_pop), so no two shares get the same
// pair. out[i] are the messages of shares[i]; none is not an error.
func (s *Store) PopMany(ctx context.Context, r PopRequest, shares []PopShare) ([][]mq.Message, error) {
	batches, leases := make([]int32, len(shares)), make([]*string, len(shares))
	for i, sh := range shares {
		batches[i] = int32(max(sh.Batch, 1))
		if !r.AutoAck {
			leases[i] = strPtr(sh.LeaseID)
		}
	}
	if r.AutoAck {
		leases = nil
	}
	args := popArgs{Queue: nullIfEmpty(r.Queue), Partition: nullIfEmpty(r.Partition), Namespace: nullIfEmpty(r.Namespace),
		Task: nullIfEmpty(r.Task), Group: r.Group, Batches: batches, MaxPartitions: r.Partitions, AutoAck: r.AutoAck,
		LeaseIDs: leases, SubMode: r.SubscriptionMode, SubTS: r.SubscriptionFrom, Now: s.nowArg()}.args()
	out := make([][]mq.Message, len(shares))
	run := func() error {
		clear(out)
		read := popRows.reader()
		return s.queryRows(ctx, sqlPop, args, func(row rowScanner) error {
			p, err := read(row)
			if err != nil {
				return err
			}
			if p.Req < 1 || int(p.Req) > len(out) {
				return fmt.Errorf("pop returned a message for request %d of %d", p.Req, len(out))
			}
			out[p.Req-1] = append(out[p.Req-1], mq.Message{ID: p.ID, TransactionID: p.TransactionID, TraceID: p.TraceID,
				Payload: []byte(p.Payload), ProducerSub: p.ProducerSub, CreatedAt: p.CreatedAt, PartitionID: p.PartitionID,
				Partition: p.Partition, Queue: p.Queue, RetryCount: p.RetryCount, Encrypted: p.Encrypted})
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
		return make([][]mq.Message, len(shares)), nil
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
