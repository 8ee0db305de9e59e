package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/mq"
)

// TxnPush is one flattened push entry of a transaction.
type TxnPush struct {
	Index   int // flattened position
	Item    PushRow
	TraceID string // "" for none
}

// TxnAck is one flattened ack entry of a transaction.
type TxnAck struct {
	Index int
	Ack   mq.AckItem
}

// Transaction applies pushes and acks in one database transaction (transaction.md §3).
// Missing queues and partitions of the pushes are created first in their own committed step,
// only once the acks are known to resolve. It returns *mq.RollbackError for a rollback and an
// ErrUnavailable-wrapped error when the database could not be used.
//
// tenant is the caller's tenant ("" is the default one): an ack of a message in another
// tenant's queue is reported as unknown (QTXN).
func (s *Store) Transaction(ctx context.Context, pushes []TxnPush, acks []TxnAck, required []string, producerSub *string, tenant string) ([]mq.TxnResult, error) {
	n := len(pushes)
	pIdx, items, traces := make([]int32, n), make([]PushRow, n), make([]*string, n)
	for i, p := range pushes {
		pIdx[i], items[i], traces[i] = int32(p.Index), p.Item, strPtr(p.TraceID)
	}
	c := pushColumns(items)
	ackItems := make([]mq.AckItem, len(acks))
	aIdx := make([]int32, len(acks))
	for i, a := range acks {
		ackItems[i], aIdx[i] = a.Ack, int32(a.Index)
	}
	a := ackArrays(ackItems)
	args := []any{pIdx, c.queues, c.parts, c.keys, uuidParam(c.ids), c.payloads, c.encrypted, traces,
		aIdx, uuidParam(a.pids), a.keys, a.groups, a.statuses, uuidParam(a.leases), a.errors, uuidParam(required), producerSub, s.nowArg(), tenant}
	var out []mq.TxnResult
	run := func() error {
		out = out[:0]
		return s.queryRows(ctx, sqlTransaction, args, func(row rowScanner) error {
			var r mq.TxnResult
			var status, mid, pid *string
			if err := row.Scan(&r.Index, &r.Kind, &status, &mid, &pid, &r.Queue, &r.DLQ, &r.AlreadyCommitted, &r.LeaseReleased); err != nil {
				return err
			}
			r.Duplicate = status != nil && *status == mq.StatusDuplicate
			r.MessageID, r.PartitionID = deref(mid), deref(pid)
			out = append(out, r)
			return nil
		})
	}
	err := s.runCreating(ctx, c.queues, c.parts, run)
	if err == nil {
		return out, nil
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, mq.ErrUnavailable) || !errors.As(err, &pgErr):
		return nil, fmt.Errorf("transaction: %w", err)
	default:
		return nil, rollbackError(pgErr)
	}
}

const sqlTransaction = `SELECT i, kind, status, message_id::text, partition_id::text, coalesce(queue_name, ''), dlq, already_committed, lease_released
	FROM qg_transaction($1, $2, $3, $4, $5::uuid[], $6, $7, $8::uuid[], $9, $10::uuid[], $11, $12, $13, $14::uuid[], $15, $16::uuid[], $17, $18, $19)`

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
