package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// NormalizeStatus maps a client's status to completed, failed, retry or dlq (concepts.md §8.1):
// absent → completed, "success" → completed, anything unknown → failed.
func NormalizeStatus(status *string) string {
	if status == nil {
		return store.AckCompleted
	}
	switch *status {
	case "completed", "success":
		return store.AckCompleted
	case store.AckRetry, store.AckDLQ:
		return *status
	}
	return store.AckFailed
}

// ack evaluates and applies acknowledgements in one transaction. Items must carry
// normalised statuses and a group.
func (b *Broker) ack(ctx context.Context, items []AckItem) ([]AckResult, error) {
	canon := make([]AckItem, len(items))
	for i, it := range items {
		canon[i] = canonicalAck(it)
	}
	res, err := b.store.Ack(ctx, canon)
	if err != nil {
		return nil, err
	}
	// A released lease or completed batch can make the pair deliverable again: enough for one
	// parked pop of this instance per released pair, and a signal to the other instances.
	released, pairs := map[string]int{}, map[[2]string]bool{}
	for i, r := range res {
		pair := [2]string{canon[i].PartitionID, canon[i].Group}
		if r.Success && r.LeaseReleased && !r.AlreadyCommitted && r.Queue != nil && !pairs[pair] {
			pairs[pair] = true
			released[*r.Queue]++
		}
	}
	for q, n := range released {
		b.hub.Wake(waiter.Signal{Queue: q, Wake: n})
		b.signals.add(q)
	}
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
func canonicalAck(a AckItem) AckItem {
	a.PartitionID = CanonicalUUID(a.PartitionID)
	a.LeaseID = LeaseRef(a.LeaseID)
	return a
}

// ExtendLease extends a live lease by at least seconds; state is one of store.Lease*.
func (b *Broker) ExtendLease(ctx context.Context, leaseID string, seconds int) (expiresAt time.Time, state string, err error) {
	return b.store.ExtendLease(ctx, leaseID, seconds)
}
