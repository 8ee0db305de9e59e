package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/waiter"
)

// ack evaluates and applies acknowledgements in one transaction. Items must carry
// normalised statuses and a group.
func (b *Broker) ack(ctx context.Context, items []mq.AckItem) ([]mq.AckResult, error) {
	canon := make([]mq.AckItem, len(items))
	for i, it := range items {
		canon[i] = canonicalAck(it)
	}
	var res []mq.AckResult
	err := b.consume(ctx, func() (err error) {
		dctx, span := b.startDB(ctx, "ack")
		res, err = b.store.Ack(dctx, canon)
		endSpan(span, err)
		return err
	})
	if err != nil {
		return nil, err
	}
	var rel releases
	for i, r := range res {
		if r.Success && r.LeaseReleased && !r.AlreadyCommitted && r.Queue != nil {
			rel.add(*r.Queue, canon[i].PartitionID, canon[i].Group)
		}
	}
	b.wakeReleased(rel)
	return res, nil
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
func (b *Broker) wakeReleased(r releases) {
	for q, n := range r.perQueue {
		b.hub.Wake(waiter.Signal{Queue: q, Wake: n})
		b.signals.add(q)
	}
}
