package broker

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// Admin reads and writes of queues (admin-api.md §1). Counters are computed live by the store.

// ListQueues lists every queue with its counters, newest first.
func (b *Broker) ListQueues(ctx context.Context) ([]mq.QueueSummary, error) {
	return b.store.QueueSummaries(ctx)
}

// LabelSummaries groups the queues by task (byTask) or by namespace.
func (b *Broker) LabelSummaries(ctx context.Context, byTask bool) ([]mq.LabelSummary, error) {
	return b.store.LabelSummaries(ctx, byTask)
}

// QueueDetail returns one queue and its partitions; found is false for an unknown queue.
func (b *Broker) QueueDetail(ctx context.Context, name string) (mq.QueueInfo, []mq.PartitionInfo, bool, error) {
	return b.store.QueueDetail(ctx, name)
}

// Overview returns the system summary.
func (b *Broker) Overview(ctx context.Context) (mq.Overview, error) {
	return b.store.Overview(ctx)
}

// DeleteQueue removes a queue with everything of it; existed is false when there was none.
// The queue's remembered encryption flag is dropped, since a queue of the same name created
// later starts unencrypted.
func (b *Broker) DeleteQueue(ctx context.Context, name string) (existed bool, err error) {
	existed, err = b.store.DeleteQueue(ctx, name)
	b.sealer.forget(name)
	return existed, err
}
