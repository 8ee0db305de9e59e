package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
	"github.com/queen-go/queen/internal/waiter"
)

// ack evaluates and applies acknowledgements in one transaction. Items must carry
// normalised statuses and a group. Requests that wait for the database are merged into one
// call (mergeAcks).
func (b *Broker) ack(ctx context.Context, items []mq.AckItem) ([]mq.AckResult, error) {
	canon := make([]mq.AckItem, len(items))
	for i, it := range items {
		canon[i] = canonicalAck(it)
	}
	req := &ackReq{items: canon}
	if err := merged(b.acks, newJob(ctx, req), b.consumeSlot, b.runAcks); err != nil {
		return nil, err
	}
	var rel releases
	for i, r := range req.res {
		if r.Success && r.LeaseReleased && !r.AlreadyCommitted && r.Queue != nil {
			rel.add(*r.Queue, canon[i].PartitionID, canon[i].Group)
		}
	}
	b.wakeReleased(ctx, rel)
	return req.res, nil
}

// ackReq is one ack request in the ack merger: its items, then its results.
type ackReq struct {
	items []mq.AckItem
	res   []mq.AckResult
}

// maxAckCall bounds the requests of one merged ack call, and maxAckItems its items (a request
// larger than that goes alone): past a few dozen requests a call only makes its first ones
// wait for the last, and the batch path already carries large requests in one call.
const (
	maxAckCall  = 64
	maxAckItems = 1000
)

// newAckMerger merges ack requests while the call stays within maxAckItems.
func newAckMerger() *merger[ackReq] {
	return &merger[ackReq]{max: maxAckCall, maxWeight: maxAckItems, weight: func(r *ackReq) int { return len(r.items) }}
}

// runAcks applies a merged call of ack requests in one transaction (store.AckMany: each
// request evaluated as alone, in order). A call that fails as a whole is retried request by
// request or fails them all, as retryAlone says: one request never fails another.
func (b *Broker) runAcks(call []*mergeJob[ackReq]) {
	ctx := callContext(b.store, call)
	reqs := make([][]mq.AckItem, len(call))
	for i, j := range call {
		reqs[i] = j.req.items
	}
	dctx, span := b.startDB(ctx, "ack")
	res, err := b.store.AckMany(dctx, reqs)
	endSpan(span, err)
	switch {
	case err == nil:
		for i, j := range call {
			j.req.res = res[i]
			j.answer(nil)
		}
	case retryAlone(len(call), err):
		for _, j := range call {
			dctx, span := b.startDB(j.ctx, "ack")
			j.req.res, err = b.store.Ack(dctx, j.req.items)
			endSpan(span, err)
			j.answer(err)
		}
	default:
		markCall(call, err)
		for _, j := range call {
			j.answer(err)
		}
	}
}

// queueSet collects distinct queue names in first-seen order.
type queueSet []string

func (s *queueSet) add(q string) {
	for _, x := range *s {
		if x == q {
			return
		}
	}
	*s = append(*s, q)
}

// canonicalAck makes a client's ids comparable: a partitionId that is not a UUID names no
// partition (""), a malformed leaseId names no live lease.
func canonicalAck(a mq.AckItem) mq.AckItem {
	a.PartitionID = mq.CanonicalUUID(a.PartitionID)
	a.LeaseID = mq.LeaseRef(a.LeaseID)
	return a
}

// ExtendLease extends a live lease by at least seconds; state is one of store.Lease*.
func (b *Broker) ExtendLease(ctx context.Context, leaseID string, seconds int) (expiresAt time.Time, state string, err error) {
	return b.store.ExtendLease(ctx, leaseID, seconds)
}

// releases counts, per queue, the distinct (partition, group) pairs whose lease an ack released
// or whose batch it completed: each can now serve one more pop.
type releases struct {
	perQueue map[string]int
	pairs    map[[2]string]bool
}

func (r *releases) add(queue, partitionID, group string) {
	if r.pairs == nil {
		r.perQueue, r.pairs = map[string]int{}, map[[2]string]bool{}
	}
	pair := [2]string{partitionID, group}
	if !r.pairs[pair] {
		r.pairs[pair] = true
		r.perQueue[queue]++
	}
}

// wakeReleased wakes one parked pop of this instance per released pair (not all of them: one
// freed partition serves one pop) and signals the queues to the other instances.
func (b *Broker) wakeReleased(ctx context.Context, r releases) {
	t, _ := tenant.Of(ctx)
	for q, n := range r.perQueue {
		b.hub.Wake(waiter.Signal{Tenant: t, Queue: q, Wake: n})
		b.signals.add(tenant.Key(t, q))
	}
}
