package admin

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Consumer-group administration (docs/api/admin-api.md §7). Every write wakes the parked pops of the
// queues it touched: at once on this instance, and through the NOTIFY its SQL function sends
// on every other one, since a seek back or a cleared lease makes messages deliverable again.

// ConsumerGroups lists one page of the (group, queue) pairs, queue mode included, filtered and
// sorted as f says.
func (a *Admin) ConsumerGroups(ctx context.Context, f mq.GroupFilter) ([]mq.GroupSummary, error) {
	f.Page = bounded(f.Page)
	return a.store.ConsumerGroups(ctx, f)
}

// LaggingPairs lists one page of the (partition, group) pairs at least f.MinLag seconds behind.
func (a *Admin) LaggingPairs(ctx context.Context, f mq.LagFilter) ([]mq.PairLag, error) {
	f.Page = bounded(f.Page)
	return a.store.LaggingPairs(ctx, f)
}

// ConsumerGroupPairs lists one page of a group's cursors on every queue, or on queue when it
// is not empty; found is false when the group has no cursor anywhere (a page past the end, or
// a queue the group does not consume, is found and empty).
func (a *Admin) ConsumerGroupPairs(ctx context.Context, group, queue string, p mq.Page) (pairs []mq.PairLag, found bool, err error) {
	p = bounded(p)
	if pairs, err = a.store.ConsumerGroupPairs(ctx, group, queue, p); err != nil || len(pairs) > 0 {
		return pairs, err == nil, err
	}
	if queue == "" && p.Offset == 0 && p.Limit > 0 {
		return pairs, false, nil
	}
	first, err := a.store.ConsumerGroupPairs(ctx, group, "", mq.Page{Limit: 1})
	return pairs, len(first) > 0, err
}

// DeleteConsumerGroup removes a group's state on every queue (queue "") or on one queue, and
// with metadata its subscriptions; it returns the cursors removed.
func (a *Admin) DeleteConsumerGroup(ctx context.Context, group, queue string, metadata bool) (int, error) {
	n, queues, err := a.store.DeleteConsumerGroup(ctx, group, queue, metadata)
	a.data.WakeQueues(ctx, queues...)
	return n, err
}

// SetSubscriptionTimestamp rewrites a group's subscription timestamp on every queue it is
// registered on; it returns the registrations changed.
func (a *Admin) SetSubscriptionTimestamp(ctx context.Context, group string, ts time.Time) (int, error) {
	n, queues, err := a.store.SetSubscriptionTimestamp(ctx, group, ts)
	a.data.WakeQueues(ctx, queues...)
	return n, err
}

// SeekQueue moves a group's cursor on every partition of a queue, to the end (ts nil) or to
// the first message created at or after ts; found is false for an unknown queue.
func (a *Admin) SeekQueue(ctx context.Context, group, queue string, ts *time.Time) (updated int, found bool, err error) {
	updated, found, err = a.store.SeekQueue(ctx, group, queue, ts)
	if found {
		a.data.WakeQueues(ctx, queue)
	}
	return updated, found, err
}

// SeekPartition moves a group's cursor to the end of one partition; movedTo is the id of the
// last stored message (nil when empty), found false for an unknown queue or partition.
func (a *Admin) SeekPartition(ctx context.Context, group, queue, partition string) (movedTo *string, found bool, err error) {
	movedTo, found, err = a.store.SeekPartition(ctx, group, queue, partition)
	if found {
		a.data.WakeQueues(ctx, queue)
	}
	return movedTo, found, err
}
