package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
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
	for _, c := range calls[1:] {
		if c.Tenant != calls[0].Tenant {
			return s.transactionsPerTenant(ctx, calls)
		}
	}
	ctx = tenant.With(ctx, calls[0].Tenant)
	ctx = budget.Ensure(ctx) // the fallback calls share the merged call's deadline
	args, names, known := s.txnManyArgs(calls)
	out := make([]TxnCallResult, len(calls))
	failed := make([]*pgconn.PgError, len(calls))
	err := s.queryRows(ctx, sqlTransactionMany, args.args(), func(row rowScanner) error {
		v, err := txnManyRows.row(row)
		if err != nil {
			return err
		}
		r := v.Request
		if r < 1 || r > len(calls) {
			return fmt.Errorf("transactions: result for request %d of %d", r, len(calls))
		}
		if v.Code != nil {
			failed[r-1] = &pgconn.PgError{Code: *v.Code, Message: deref(v.Message), Detail: deref(v.Detail)}
			return nil
		}
		out[r-1].Results = append(out[r-1].Results, v.result())
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
					s.partitions.remember(calls[r].Tenant, n.queues, n.parts, ids)
				}
			}
		case pgErr.Code == codeMissingPartitions:
			if known[r] != nil {
				s.partitions.forget(calls[r].Tenant, n.queues, n.parts) // one was deleted: resolve them again
			}
			alone = append(alone, r)
		case pgErr.Code == codeDeadlock:
			// Its block was rolled back, nothing of it written: alone it is run again as
			// Transaction runs a deadlock's victim.
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

// txnManyArgs makes each request's qg_transaction argument. It also returns each request's
// push names and the partition ids the cache knew for them (nil: none, or not all).
func (s *Store) txnManyArgs(calls []TxnCall) (txnManyArgs, []txnNames, [][]string) {
	a := txnManyArgs{Requests: make([]txnCall, len(calls))}
	names := make([]txnNames, len(calls))
	known := make([][]string, len(calls))
	for r, c := range calls {
		call, pc := s.txnCallOf(c.Pushes, c.Acks, c.Required, c.ProducerSub, c.Tenant)
		names[r] = txnNames{pc.queues, pc.parts}
		// The pushes' partition ids from the push route's cache, as Transaction takes them:
		// all of a request's, or none (null: qg_transaction_many resolves the names).
		if len(c.Pushes) > 0 {
			known[r] = s.partitions.lookup(c.Tenant, pc.queues, pc.parts)
		}
		call.PIDs = uuidJSON(known[r])
		a.Requests[r] = call
	}
	return a, names, known
}

// Error rows carry NULL entry columns, read as zero values.
const sqlTransactionMany = `SELECT r, coalesce(i, 0) AS i, coalesce(kind, '') AS kind, status,
		message_id::text AS message_id, partition_id::text AS partition_id,
		coalesce(queue_name, '') AS queue_name, coalesce(dlq, false) AS dlq,
		coalesce(already_committed, false) AS already_committed, coalesce(lease_released, false) AS lease_released,
		err_code, err_message, err_detail
	FROM qg_transaction_many(p_requests => $1)`

// txnManyArgs are the parameters of qg_transaction_many (see sqlCall): every request's
// qg_transaction argument (txnCall), in order, as one JSON array.
type txnManyArgs struct {
	Requests []txnCall
}

func (a txnManyArgs) args() []any { return []any{a.Requests} }

// txnManyRow is one row of qg_transaction_many, read by column name: an entry of a committed
// request, or a failed request's error (Code set).
type txnManyRow struct {
	Request int `db:"r"`
	txnResultRow
	Code    *string `db:"err_code"`
	Message *string `db:"err_message"`
	Detail  *string `db:"err_detail"`
}

var txnManyRows = readQuery[txnManyRow]{sqlTransactionMany}

// transactionsPerTenant runs a call holding requests of several tenants (the broker's merger
// never sends one) as one call per tenant, in order of first appearance: a call runs in one
// tenant's scope, where the pushes' names resolve. Each request's outcome is still the one it
// would have alone; a tenant's call that fails as a whole fails its requests only, since the
// calls before it may have committed.
func (s *Store) transactionsPerTenant(ctx context.Context, calls []TxnCall) ([]TxnCallResult, error) {
	var order []string
	groups := map[string][]int{}
	for i, c := range calls {
		if _, seen := groups[c.Tenant]; !seen {
			order = append(order, c.Tenant)
		}
		groups[c.Tenant] = append(groups[c.Tenant], i)
	}
	out := make([]TxnCallResult, len(calls))
	for _, t := range order {
		idx := groups[t]
		sub := make([]TxnCall, len(idx))
		for j, i := range idx {
			sub[j] = calls[i]
		}
		res, err := s.Transactions(ctx, sub)
		for j, i := range idx {
			if err != nil {
				out[i] = TxnCallResult{Err: txnError(err)}
			} else {
				out[i] = res[j]
			}
		}
	}
	return out, nil
}
