package broker

import (
	"context"
	"errors"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// push writes items in one transaction and wakes parked pops of the written queues; when the
// database is unavailable or the call passed its deadline (busy: the caller cannot tell what
// happened), or older pushes of the same partitions wait in the spool, it spools them instead
// (spool.go).
func (b *Broker) push(ctx context.Context, items []mq.PushItem, producerSub *string) ([]mq.PushResult, error) {
	if b.PushMaintenance() && b.spooling.sp == nil {
		// Push maintenance spools every push (spoolFirst); a broker without a spool (built by
		// hand, as in tests) refuses them rather than write them to the database.
		return nil, mq.ErrPushMaintenance
	}
	// The push rate first: a push it refuses is neither written nor spooled.
	if err := b.limits.allowPush(ctx, len(items), b.store.Now()); err != nil {
		return nil, b.refused(ctx, err)
	}
	rows := make([]store.PushRow, len(items))
	ptrs := make([]*store.PushRow, len(items))
	for i, it := range items {
		rows[i] = b.pushRow(it)
		rows[i].ProducerSub = producerSub
		ptrs[i] = &rows[i]
	}
	if b.spoolFirst(ctx, rows) {
		return b.spoolPush(ctx, items, rows, producerSub)
	}
	err := b.seal(ctx, ptrs)
	var res []mq.PushResult
	if err == nil {
		dctx, span := b.startDB(ctx, "push")
		res, err = b.pushes.submit(dctx, rows)
		endSpan(span, err)
	}
	if err != nil {
		if errors.Is(err, mq.ErrUnavailable) || errors.Is(err, mq.ErrBusy) {
			// The call ran on the coalescer's context: count the answer for the outage summary
			// or the overload counter.
			budget.Mark(ctx, err)
			if b.spooling.sp != nil {
				// The same ids and keys: should the abandoned attempt have committed after
				// all, replay drops these as duplicates (docs/api/operations.md §9.1).
				return b.spoolPush(ctx, items, rows, producerSub)
			}
		}
		return nil, b.refused(ctx, err)
	}
	out := make([]mq.PushResult, len(res))
	var written queueSet
	for i, r := range res {
		r.TransactionID = rows[i].Key
		out[i] = r
		if r.Status == mq.StatusQueued {
			written.add(r.Queue)
		}
	}
	b.wake(ctx, written...)
	return out, nil
}

// pushRow mints the message id and applies the defaults: partition Default, key = message id.
func (b *Broker) pushRow(it mq.PushItem) store.PushRow {
	id := newID()
	key := it.TransactionID
	if key == "" {
		key = id
	}
	part := it.Partition
	if part == "" {
		part = "Default"
	}
	return store.PushRow{Queue: it.Queue, Partition: part, Key: key, ID: id, Payload: it.Payload}
}
