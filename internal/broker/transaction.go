package broker

import (
	"context"
	"errors"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
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
	// Every caller is in the default tenant until tenancy (docs/api/concepts.md §14) lands; the store
	// already enforces the boundary for the tenant it is given.
	var res []mq.TxnResult
	err := b.consume(ctx, func() (err error) {
		dctx, span := b.startDB(ctx, "transaction")
		res, err = b.store.Transaction(dctx, pushes, acks, required, producerSub, defaultTenant)
		endSpan(span, err)
		return err
	})
	var rb *mq.RollbackError
	if errors.As(err, &rb) {
		out.Rollback = rb.Error()
		return out, nil
	}
	if err != nil {
		return out, err
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
	b.wake(written...)
	b.wakeReleased(rel)
	return out, nil
}

// defaultTenant is the single tenant of a broker without tenancy.
const defaultTenant = ""
