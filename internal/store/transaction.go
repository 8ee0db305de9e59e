package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
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
// tn is the caller's tenant ("" is the default one): the call runs in its scope, where the
// pushes' names resolve, and an ack of a message in another tenant's queue is reported as
// unknown (QTXN).
func (s *Store) Transaction(ctx context.Context, pushes []TxnPush, acks []TxnAck, required []string, producerSub *string, tn string) ([]mq.TxnResult, error) {
	ctx = tenant.With(budget.Ensure(ctx), tn)
	n := len(pushes)
	base, c := s.txnCallOf(pushes, acks, required, producerSub, tn)
	var out []mq.TxnResult
	run := func() error {
		out = out[:0]
		// The pushes' partition ids from the push route's cache, so that a pipeline stage does
		// not resolve its names on every call (qg_partition_ids).
		var known []string
		if n > 0 {
			known = s.partitions.lookup(tn, c.queues, c.parts)
		}
		call := base
		call.PIDs = uuidJSON(known)
		err := s.queryRows(ctx, sqlTransaction, txnArgs{call}.args(), txnResults.each(func(r txnResultRow) {
			out = append(out, r.result())
		}))
		switch {
		case err == nil && n > 0 && known == nil:
			if ids := pushPartitionIDs(out); len(ids) == n {
				s.partitions.remember(tn, c.queues, c.parts, ids)
			}
		case pgCode(err) == codeMissingPartitions && known != nil:
			s.partitions.forget(tn, c.queues, c.parts) // one was deleted: resolve them again
		}
		return err
	}
	// A deadlock's victim was rolled back whole by PostgreSQL, so running it again is safe; two
	// calls' locks can meet in a cycle beside other sessions (a job, an admin statement) that
	// take theirs in another order.
	err := s.runCreating(ctx, c.queues, c.parts, func() error { return retryOnDeadlock(txnDeadlockAttempts, run) })
	if err != nil {
		return nil, txnError(err)
	}
	return out, nil
}

// txnDeadlockAttempts bounds the runs of a transaction call that PostgreSQL keeps picking as a
// deadlock's victim; the last one's rollback is answered (QDB).
const txnDeadlockAttempts = 3

// txnError is what Transaction returns for a call that failed with err: *mq.RollbackError
// for a rollback, else err wrapped (an ErrUnavailable one when the database could not be used).
// Transactions answers each request's error with it too, so both say the same.
func txnError(err error) error {
	var pgErr *pgconn.PgError
	var limit *mq.LimitError
	switch {
	case errors.As(err, &limit):
		// Refused by a tenant limit (classify): answered as such, not as a rollback.
		return limit
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

const sqlTransaction = `SELECT i, kind, status, message_id::text AS message_id, partition_id::text AS partition_id,
		coalesce(queue_name, '') AS queue_name, dlq, already_committed, lease_released
	FROM qg_transaction(p_call => $1)`

// txnArgs are the parameters of qg_transaction (see sqlCall): the whole call as one JSON object.
type txnArgs struct {
	Call txnCall
}

func (a txnArgs) args() []any { return []any{a.Call} }

// txnCall is qg_transaction's argument, the composite qg_txn_call as JSON: each field's key is
// the type's field name (TestJSONCallsMatchTheirTypes), so PostgreSQL reads every value by
// name. The flattened pushes (PushIdx to Traces), the flattened acks (AckIdx to AckErrors),
// then the whole call's. Every uuid is a string or null ("" is sent as null, see uuidJSON).
type txnCall struct {
	PushIdx []int32 `json:"push_idx"`
	pushArrays
	AckIdx      []int32   `json:"ack_idx"`
	AckPIDs     []*string `json:"ack_pids"`
	AckKeys     []string  `json:"ack_keys"`
	AckGroups   []string  `json:"ack_groups"`
	AckStatuses []string  `json:"ack_statuses"`
	AckLeases   []*string `json:"ack_leases"`
	AckErrors   []*string `json:"ack_errors"`
	Required    []*string `json:"required"`
	Sub         *string   `json:"sub"`
	Now         any       `json:"now"`
	Tenant      string    `json:"tenant"`
	PIDs        []*string `json:"pids"` // the pushes' partition ids; null: resolve the names
}

// pushArrays are the flattened pushes of a JSON call (qg_txn_call, qg_cycle_call), one array
// per column, in the order of the composite type's fields; a call struct embeds them, so their
// keys sit at its top level.
type pushArrays struct {
	Queues     []string  `json:"queues"`
	Partitions []string  `json:"partitions"`
	Keys       []string  `json:"keys"`
	IDs        []*string `json:"ids"`
	Payloads   []string  `json:"payloads"`
	Encrypted  []bool    `json:"encrypted"`
	Traces     []*string `json:"traces"`
}

// pushArraysOf is the pushes' columns c with their trace ids (nil for none).
func pushArraysOf(c pushCols, traces []*string) pushArrays {
	return pushArrays{Queues: c.queues, Partitions: c.parts, Keys: c.keys, IDs: uuidJSON(c.ids),
		Payloads: c.payloads, Encrypted: c.encrypted, Traces: traces}
}

// txnCallOf is the argument of one transaction (pushes, acks, requiredLeases, producer sub,
// tenant) with PIDs unset, and its pushes' columns.
func (s *Store) txnCallOf(pushes []TxnPush, acks []TxnAck, required []string, producerSub *string, tenant string) (txnCall, pushCols) {
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
	return txnCall{PushIdx: pIdx, pushArrays: pushArraysOf(c, traces),
		AckIdx: aIdx, AckPIDs: a.pids, AckKeys: a.keys, AckGroups: a.groups, AckStatuses: a.statuses,
		AckLeases: a.leases, AckErrors: a.errors, Required: uuidJSON(required), Sub: producerSub, Now: s.nowArg(), Tenant: tenant}, c
}

// txnResultRow is one row of qg_transaction, and of qg_transaction_many's for a request that
// committed, read by column name.
type txnResultRow struct {
	Index            int     `db:"i"`
	Kind             string  `db:"kind"`
	Status           *string `db:"status"`
	MessageID        *string `db:"message_id"`
	PartitionID      *string `db:"partition_id"`
	Queue            string  `db:"queue_name"`
	DLQ              bool    `db:"dlq"`
	AlreadyCommitted bool    `db:"already_committed"`
	LeaseReleased    bool    `db:"lease_released"`
}

// txnResults reads sqlTransaction's rows by name.
var txnResults = readQuery[txnResultRow]{sqlTransaction}

func (r txnResultRow) result() mq.TxnResult {
	return mq.TxnResult{Index: r.Index, Kind: r.Kind, Duplicate: r.Status != nil && *r.Status == mq.StatusDuplicate,
		MessageID: deref(r.MessageID), PartitionID: deref(r.PartitionID), Queue: r.Queue, DLQ: r.DLQ,
		AlreadyCommitted: r.AlreadyCommitted, LeaseReleased: r.LeaseReleased}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
