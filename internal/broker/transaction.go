package broker

import (
	"context"
	"errors"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
)

// transaction applies the entries in one database transaction (docs/api/transaction.md §3). A
// rollback is a normal outcome; the error is for an unusable database.
func (b *Broker) transaction(ctx context.Context, entries []mq.TxnEntry, requiredLeases []string, producerSub *string) (mq.TxnOutcome, error) {
	out := mq.TxnOutcome{ID: newID()}
	if len(entries) == 0 {
		return out, nil
	}
	var pushes []store.TxnPush
	var acks []store.TxnAck
	keys := make([]string, len(entries))
	for i, e := range entries {
		if e.Ack != nil {
			a := canonicalAck(*e.Ack)
			acks = append(acks, store.TxnAck{Index: i, Ack: a})
			keys[i] = a.TransactionID
			continue
		}
		row := b.pushRow(e.Push)
		keys[i] = row.Key
		pushes = append(pushes, store.TxnPush{Index: i, Item: row, TraceID: e.TraceID})
	}
	if len(pushes) > 0 {
		// A transaction's pushes count towards its tenant's push rate as the push route's do.
		if err := b.limits.allowPush(ctx, len(pushes), b.store.Now()); err != nil {
			return out, b.refused(ctx, err)
		}
	}
	ptrs := make([]*store.PushRow, len(pushes))
	for i := range pushes {
		ptrs[i] = &pushes[i].Item
	}
	if err := b.seal(ctx, ptrs); err != nil {
		return out, err
	}
	var required []string
	for _, l := range requiredLeases {
		required = append(required, requiredLeaseRef(l))
	}
	// The caller's tenant (docs/api/concepts.md §14): its pushes resolve in it, and an ack of
	// another tenant's message rolls the transaction back as QTXN.
	tn, _ := tenant.Of(ctx)
	req := &txnReq{call: store.TxnCall{Pushes: pushes, Acks: acks, Required: required, ProducerSub: producerSub,
		Tenant: tn}}
	err := merged(b.txns, newJob(ctx, req), b.consumeSlot, b.runTxns)
	res := req.res
	var rb *mq.RollbackError
	if errors.As(err, &rb) {
		out.Rollback = rb.Error()
		return out, nil
	}
	if err != nil {
		return out, b.refused(ctx, err)
	}
	out.Results = res
	var written queueSet
	var rel releases
	for i, r := range res {
		out.Results[i].TransactionID = keys[r.Index]
		switch {
		case r.Kind == "push" && !r.Duplicate:
			written.add(r.Queue)
		case r.Kind == "ack" && r.LeaseReleased && !r.AlreadyCommitted:
			rel.add(r.Queue, r.PartitionID, entries[r.Index].Ack.Group)
		}
	}
	b.wake(ctx, written...)
	b.wakeReleased(ctx, rel)
	return out, nil
}

// txnReq is one transaction request in the transaction merger: what it does, then its results.
type txnReq struct {
	call store.TxnCall
	res  []mq.TxnResult
}

// newTxnMerger merges transaction requests up to the store's bound per call
// (store.MaxTxnCall: each request is a subtransaction).
func newTxnMerger() *merger[txnReq] {
	return &merger[txnReq]{max: store.MaxTxnCall}
}

// runTxns runs a merged call of transaction requests in one PostgreSQL transaction, each in
// a subtransaction of its own (store.Transactions): each request is still all or nothing and
// gets exactly the answer it would have alone, and the call commits once, before any request
// is answered. A call that fails as a whole is retried request by request or fails them all,
// as retryAlone says.
func (b *Broker) runTxns(call []*mergeJob[txnReq]) {
	if len(call) == 1 {
		j := call[0]
		dctx, span := b.startDB(j.ctx, "transaction")
		res, err := b.store.Transaction(dctx, j.req.call.Pushes, j.req.call.Acks, j.req.call.Required,
			j.req.call.ProducerSub, j.req.call.Tenant)
		endSpan(span, err)
		j.req.res = res
		j.answer(err)
		return
	}
	ctx := callContext(b.store, call)
	calls := make([]store.TxnCall, len(call))
	for i, j := range call {
		calls[i] = j.req.call
	}
	dctx, span := b.startDB(ctx, "transaction")
	out, err := b.store.Transactions(dctx, calls)
	endSpan(span, err)
	switch {
	case err == nil:
		for i, j := range call {
			j.req.res = out[i].Results
			j.answer(out[i].Err)
		}
	case retryAlone(len(call), err):
		for _, j := range call {
			b.runTxns([]*mergeJob[txnReq]{j})
		}
	default:
		markCall(call, err)
		for _, j := range call {
			j.answer(err)
		}
	}
}
