package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/waiter"
)

// Consumer-group administration (admin-api.md §7). Every write wakes the parked pops of the
// queues it touched: at once on this instance, and through the NOTIFY its SQL function sends
// on every other one, since a seek back or a cleared lease makes messages deliverable again.

// ConsumerGroups lists every (group, queue) pair, queue mode included.
func (b *Broker) ConsumerGroups(ctx context.Context) ([]mq.GroupSummary, error) {
	return b.store.ConsumerGroups(ctx)
}

// LaggingPairs lists the (partition, group) pairs at least minLag seconds behind.
func (b *Broker) LaggingPairs(ctx context.Context, minLag int64) ([]mq.PairLag, error) {
	return b.store.LaggingPairs(ctx, minLag)
}

// ConsumerGroupPairs lists one group's cursors on every queue; none means an unknown group.
func (b *Broker) ConsumerGroupPairs(ctx context.Context, group string) ([]mq.PairLag, error) {
	return b.store.ConsumerGroupPairs(ctx, group)
}

// DeleteConsumerGroup removes a group's state on every queue (queue "") or on one queue, and
// with metadata its subscriptions; it returns the cursors removed.
func (b *Broker) DeleteConsumerGroup(ctx context.Context, group, queue string, metadata bool) (int, error) {
	n, queues, err := b.store.DeleteConsumerGroup(ctx, group, queue, metadata)
	b.wakeQueues(queues...)
	return n, err
}

// SetSubscriptionTimestamp rewrites a group's subscription timestamp on every queue it is
// registered on; it returns the registrations changed.
func (b *Broker) SetSubscriptionTimestamp(ctx context.Context, group string, ts time.Time) (int, error) {
	n, queues, err := b.store.SetSubscriptionTimestamp(ctx, group, ts)
	b.wakeQueues(queues...)
	return n, err
}

// SeekQueue moves a group's cursor on every partition of a queue, to the end (ts nil) or to
// the first message created at or after ts; found is false for an unknown queue.
func (b *Broker) SeekQueue(ctx context.Context, group, queue string, ts *time.Time) (updated int, found bool, err error) {
	updated, found, err = b.store.SeekQueue(ctx, group, queue, ts)
	if found {
		b.wakeQueues(queue)
	}
	return updated, found, err
}

// SeekPartition moves a group's cursor to the end of one partition; movedTo is the id of the
// last stored message (nil when empty), found false for an unknown queue or partition.
func (b *Broker) SeekPartition(ctx context.Context, group, queue, partition string) (movedTo *string, found bool, err error) {
	movedTo, found, err = b.store.SeekPartition(ctx, group, queue, partition)
	if found {
		b.wakeQueues(queue)
	}
	return movedTo, found, err
}

// wakeQueues wakes this instance's parked pops of the named queues (the SQL of these admin
// operations notifies the other instances itself).
func (b *Broker) wakeQueues(queues ...string) {
	for _, q := range queues {
		b.hub.Wake(waiter.Signal{Queue: q})
	}
}
