package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
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

// Transaction applies pushes and acks in one database transaction (docs/api/transaction.md §3).
// Missing queues and partitions of the pushes are created first in their own committed step,
// only once the acks are known to resolve. It returns *mq.RollbackError for a rollback and an
// ErrUnavailable-wrapped error when the database could not be used.
//
// tenant is the caller's tenant ("" is the default one): an ack of a message in another
// tenant's queue is reported as unknown (QTXN).
func (s *Store) Transaction(ctx context.Context, pushes []TxnPush, acks []TxnAck, required []string, producerSub *string, tenant string) ([]mq.TxnResult, error) {
	ctx = budget.Ensure(ctx)
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
	base := txnArgs{PushIdx: pIdx, Queues: c.queues, Partitions: c.parts, Keys: c.keys, IDs: c.ids,
		Payloads: c.payloads, Encrypted: c.encrypted, Traces: traces,
		AckIdx: aIdx, AckPIDs: a.pids, AckKeys: a.keys, AckGroups: a.groups, AckStatuses: a.statuses,
		AckLeases: a.leases, AckErrors: a.errors, Required: required, Sub: producerSub, Now: s.nowArg(), Tenant: tenant}
	var out []mq.TxnResult
	run := func() error {
		out = out[:0]
		// The pushes' partition ids from the push route's cache, so that a pipeline stage does
		// not resolve its names on every call (qg_partition_ids).
		var known []string
		if n > 0 {
			known = s.partitions.lookup(c.queues, c.parts)
		}
		args := base
		args.PIDs = known
		err := s.queryRows(ctx, sqlTransaction, args.args(), func(row rowScanner) error {
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
		switch {
		case err == nil && n > 0 && known == nil:
			if ids := pushPartitionIDs(out); len(ids) == n {
				s.partitions.remember(c.queues, c.parts, ids)
			}
		case pgCode(err) == codeMissingPartitions && known != nil:
			s.partitions.forget(c.queues, c.parts) // one was deleted: resolve them again
		}
		return err
	}
	if err := s.runCreating(ctx, c.queues, c.parts, run); err != nil {
		return nil, txnError(err)
	}
	return out, nil
}

// txnError is what Transaction returns for a call that failed with err: *mq.RollbackError
// for a rollback, else err wrapped (an ErrUnavailable one when the database could not be used).
// Transactions answers each request's error with it too, so both say the same.
func txnError(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && isServerTimeout(pgErr.Code):
		// PostgreSQL ended the call and rolled it back: the outcome is known, so it is the
		// documented QDB rollback rather than a 500 (docs/api/operations.md §9.1).
		return rollbackError(pgErr)
	case errors.Is(err, mq.ErrUnavailable) || !errors.As(err, &pgErr):
		return fmt.Errorf("transaction: %w", err)
	default:
		return rollbackError(pgErr)
	}
}

// pushPartitionIDs returns the partition ids of a committed transaction's pushes, in push
// order (the results come ordered by flattened index, as the pushes are).
func pushPartitionIDs(res []mq.TxnResult) []string {
	var ids []string
	for _, r := range res {
		if r.Kind == "push" {
			ids = append(ids, r.PartitionID)
		}
	}
	return ids
}

const sqlTransaction = `SELECT i, kind, status, message_id::text, partition_id::text, coalesce(queue_name, ''), dlq, already_committed, lease_released
	FROM qg_transaction(p_push_idx => $1, p_queues => $2, p_partitions => $3, p_keys => $4, p_ids => $5::uuid[],
		p_payloads => $6, p_encrypted => $7, p_traces => $8::uuid[],
		p_ack_idx => $9, p_ack_pids => $10::uuid[], p_ack_keys => $11, p_ack_groups => $12,
		p_ack_statuses => $13, p_ack_leases => $14::uuid[], p_ack_errors => $15,
		p_required => $16::uuid[], p_sub => $17, p_now => $18, p_tenant => $19, p_pids => $20::uuid[])`

// txnArgs are the parameters of qg_transaction (see sqlCall): the flattened pushes (PushIdx
// to Traces), the flattened acks (AckIdx to AckErrors), then the whole call's.
type txnArgs struct {
	PushIdx                       []int32
	Queues, Partitions, Keys, IDs []string
	Payloads                      []string
	Encrypted                     []bool
	Traces                        []*string
	AckIdx                        []int32
	AckPIDs                       []*string
	AckKeys, AckGroups            []string
	AckStatuses                   []string
	AckLeases, AckErrors          []*string
	Required                      []string
	Sub                           *string
	Now                           any
	Tenant                        string
	PIDs                          []string // the pushes' partition ids; nil: resolve the names
}

func (a txnArgs) args() []any {
	return []any{a.PushIdx, a.Queues, a.Partitions, a.Keys, uuidParam(a.IDs), a.Payloads, a.Encrypted, a.Traces,
		a.AckIdx, uuidParam(a.AckPIDs), a.AckKeys, a.AckGroups, a.AckStatuses, uuidParam(a.AckLeases), a.AckErrors,
		uuidParam(a.Required), a.Sub, a.Now, a.Tenant, uuidParam(a.PIDs)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
