package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// MaxTxnCall is the most requests one Transactions call carries; callers pass at most this
// many. Each request runs in a subtransaction of its own, qg_push_set (a request of several
// pushes) opens one more for its NOWAIT partition locks, and the call's pre-lock one: at most
// 2 × 24 + 1 = 49 subtransactions with an XID. A backend caches 64 of them
// (PGPROC_MAX_CACHED_SUBXIDS); beyond that its subtransactions overflow to pg_subtrans, and
// every snapshot taken while it runs, in any session, has to look them up there.
const MaxTxnCall = 24

// TxnCall is one request of a merged transaction call: exactly the arguments of Transaction
// (its pushes, acks, requiredLeases, producer sub and tenant).
type TxnCall struct {
	Pushes      []TxnPush
	Acks        []TxnAck
	Required    []string
	ProducerSub *string
	Tenant      string
}

// TxnCallResult is one request's outcome in a merged call: Results as Transaction returns
// them, or Err exactly as Transaction would return it for that request alone
// (*mq.RollbackError for a rollback).
type TxnCallResult struct {
	Results []mq.TxnResult
	Err     error
}

// Transactions runs calls (at most MaxTxnCall) in one database transaction, committed once,
// each all or nothing on its own (a subtransaction of qg_transaction_many): out[r] is calls[r]'s
// outcome, the one Transaction gives it alone after the requests before it. A request that
// rolls back changes nothing and the others still commit. A request whose pushes need
// partitions that do not exist yet is run alone through Transaction after the merged call
// committed (it creates them in their own committed step), and answered from that: it then
// comes after the requests of the merged call, not in its place among them (the requests of
// one call were concurrent, so that is an order they could have had; a later one that needs
// the same new partitions is left out as well and runs after it).
//
// The returned error is for the merged call as a whole: when PostgreSQL raised it (a
// *pgconn.PgError in the chain, ServerAnswered), nothing was committed and the caller runs
// each request alone through Transaction. Any other (the connection lost, the deadline
// passed, the caller gone) may have come after the commit, as for Transaction: the outcome
// is then unknown.
func (s *Store) Transactions(ctx context.Context, calls []TxnCall) ([]TxnCallResult, error) {
	switch {
	case len(calls) == 0:
		return nil, nil
	case len(calls) == 1:
		// Alone it is Transaction, without the subtransaction and the pre-lock.
		c := calls[0]
		res, err := s.Transaction(ctx, c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		return []TxnCallResult{{Results: res, Err: err}}, nil
	case len(calls) > MaxTxnCall:
		return nil, fmt.Errorf("transactions: %d requests, at most %d per call", len(calls), MaxTxnCall)
	}
	ctx = budget.Ensure(ctx) // the fallback calls share the merged call's deadline
	args, names, known := s.txnManyArgs(calls)
	out := make([]TxnCallResult, len(calls))
	failed := make([]*pgconn.PgError, len(calls))
	err := s.queryRows(ctx, sqlTransactionMany, args.args(), func(row rowScanner) error {
		var r int
		var res mq.TxnResult
		var status, mid, pid, code, msg, detail *string
		if err := row.Scan(&r, &res.Index, &res.Kind, &status, &mid, &pid, &res.Queue, &res.DLQ,
			&res.AlreadyCommitted, &res.LeaseReleased, &code, &msg, &detail); err != nil {
			return err
		}
		if r < 1 || r > len(calls) {
			return fmt.Errorf("transactions: result for request %d of %d", r, len(calls))
		}
		if code != nil {
			failed[r-1] = &pgconn.PgError{Code: *code, Message: deref(msg), Detail: deref(detail)}
			return nil
		}
		res.Duplicate = status != nil && *status == mq.StatusDuplicate
		res.MessageID, res.PartitionID = deref(mid), deref(pid)
		out[r-1].Results = append(out[r-1].Results, res)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("transactions: %w", err)
	}
	// Committed. The partition-id cache as Transaction keeps it, per request.
	var alone []int
	for r, pgErr := range failed {
		n := names[r]
		switch {
		case pgErr == nil:
			if len(n.queues) > 0 && known[r] == nil {
				if ids := pushPartitionIDs(out[r].Results); len(ids) == len(n.queues) {
					s.partitions.remember(n.queues, n.parts, ids)
				}
			}
		case pgErr.Code == codeMissingPartitions:
			if known[r] != nil {
				s.partitions.forget(n.queues, n.parts) // one was deleted: resolve them again
			}
			alone = append(alone, r)
		default:
			// As the error would have come back from the call alone: classified as withConn
			// does, then mapped as Transaction does.
			out[r] = TxnCallResult{Err: txnError(classify(pgErr))}
		}
	}
	for _, r := range alone {
		c := calls[r]
		res, err := s.Transaction(ctx, c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		out[r] = TxnCallResult{Results: res, Err: err}
	}
	return out, nil
}

// txnNames are one request's push names, in push order.
type txnNames struct{ queues, parts []string }

// txnManyArgs flattens calls into qg_transaction_many's arrays. It also returns each request's
// push names and the partition ids the cache knew for them (nil: none, or not all).
func (s *Store) txnManyArgs(calls []TxnCall) (txnManyArgs, []txnNames, [][]string) {
	var np, na, nr int
	for _, c := range calls {
		np, na, nr = np+len(c.Pushes), na+len(c.Acks), nr+len(c.Required)
	}
	a := txnManyArgs{
		PushStarts: make([]int32, len(calls)), PushIdx: make([]int32, 0, np),
		Queues: make([]string, 0, np), Partitions: make([]string, 0, np), Keys: make([]string, 0, np),
		IDs: make([]string, 0, np), Payloads: make([]string, 0, np), Encrypted: make([]bool, 0, np),
		Traces: make([]*string, 0, np), PIDs: make([]*string, 0, np),
		AckStarts: make([]int32, len(calls)), AckIdx: make([]int32, 0, na),
		AckPIDs: make([]*string, 0, na), AckKeys: make([]string, 0, na), AckGroups: make([]string, 0, na),
		AckStatuses: make([]string, 0, na), AckLeases: make([]*string, 0, na), AckErrors: make([]*string, 0, na),
		ReqStarts: make([]int32, len(calls)), Required: make([]string, 0, nr),
		Subs: make([]*string, len(calls)), Tenants: make([]string, len(calls)), Now: s.nowArg(),
	}
	names := make([]txnNames, len(calls))
	known := make([][]string, len(calls))
	for r, c := range calls {
		a.PushStarts[r] = int32(len(a.PushIdx) + 1)
		items := make([]PushRow, len(c.Pushes))
		for i, p := range c.Pushes {
			items[i] = p.Item
			a.PushIdx = append(a.PushIdx, int32(p.Index))
			a.Traces = append(a.Traces, strPtr(p.TraceID))
		}
		pc := pushColumns(items)
		a.Queues, a.Partitions, a.Keys = append(a.Queues, pc.queues...), append(a.Partitions, pc.parts...), append(a.Keys, pc.keys...)
		a.IDs, a.Payloads, a.Encrypted = append(a.IDs, pc.ids...), append(a.Payloads, pc.payloads...), append(a.Encrypted, pc.encrypted...)
		names[r] = txnNames{pc.queues, pc.parts}
		// The pushes' partition ids from the push route's cache, as Transaction takes them:
		// all of a request's, or none (NULL: qg_transaction_many resolves the names).
		if len(items) > 0 {
			known[r] = s.partitions.lookup(pc.queues, pc.parts)
		}
		for i := range items {
			var id *string
			if known[r] != nil {
				id = &known[r][i]
			}
			a.PIDs = append(a.PIDs, id)
		}

		a.AckStarts[r] = int32(len(a.AckIdx) + 1)
		acks := make([]mq.AckItem, len(c.Acks))
		for i, k := range c.Acks {
			acks[i] = k.Ack
			a.AckIdx = append(a.AckIdx, int32(k.Index))
		}
		ac := ackArrays(acks)
		a.AckPIDs, a.AckKeys, a.AckGroups = append(a.AckPIDs, ac.pids...), append(a.AckKeys, ac.keys...), append(a.AckGroups, ac.groups...)
		a.AckStatuses, a.AckLeases, a.AckErrors = append(a.AckStatuses, ac.statuses...), append(a.AckLeases, ac.leases...), append(a.AckErrors, ac.errors...)

		a.ReqStarts[r] = int32(len(a.Required) + 1)
		a.Required = append(a.Required, c.Required...)
		a.Subs[r], a.Tenants[r] = c.ProducerSub, c.Tenant
	}
	return a, names, known
}

// Error rows carry NULL entry columns, read as zero values.
const sqlTransactionMany = `SELECT r, coalesce(i, 0), coalesce(kind, ''), status, message_id::text, partition_id::text,
		coalesce(queue_name, ''), coalesce(dlq, false), coalesce(already_committed, false), coalesce(lease_released, false),
		err_code, err_message, err_detail
	FROM qg_transaction_many(p_push_starts => $1, p_push_idx => $2, p_queues => $3, p_partitions => $4, p_keys => $5,
		p_ids => $6::uuid[], p_payloads => $7, p_encrypted => $8, p_traces => $9::uuid[], p_pids => $10::uuid[],
		p_ack_starts => $11, p_ack_idx => $12, p_ack_pids => $13::uuid[], p_ack_keys => $14, p_ack_groups => $15,
		p_ack_statuses => $16, p_ack_leases => $17::uuid[], p_ack_errors => $18,
		p_req_starts => $19, p_required => $20::uuid[], p_subs => $21, p_tenants => $22, p_now => $23)`

// txnManyArgs are the parameters of qg_transaction_many (see sqlCall): txnArgs' arrays of
// every request flattened, each group with the requests' 1-based starts (PushStarts for the
// pushes, PIDs included; AckStarts for the acks; ReqStarts for the requiredLeases), then one
// element per request (Subs, Tenants), then the call's clock.
type txnManyArgs struct {
	PushStarts                    []int32
	PushIdx                       []int32
	Queues, Partitions, Keys, IDs []string
	Payloads                      []string
	Encrypted                     []bool
	Traces                        []*string
	PIDs                          []*string // the cache's ids; nil elements: resolve the names
	AckStarts                     []int32
	AckIdx                        []int32
	AckPIDs                       []*string
	AckKeys, AckGroups            []string
	AckStatuses                   []string
	AckLeases, AckErrors          []*string
	ReqStarts                     []int32
	Required                      []string
	Subs                          []*string
	Tenants                       []string
	Now                           any
}

func (a txnManyArgs) args() []any {
	return []any{a.PushStarts, a.PushIdx, a.Queues, a.Partitions, a.Keys, uuidParam(a.IDs), a.Payloads, a.Encrypted,
		a.Traces, uuidParam(a.PIDs), a.AckStarts, a.AckIdx, uuidParam(a.AckPIDs), a.AckKeys, a.AckGroups,
		a.AckStatuses, uuidParam(a.AckLeases), a.AckErrors, a.ReqStarts, uuidParam(a.Required), a.Subs, a.Tenants, a.Now}
}
