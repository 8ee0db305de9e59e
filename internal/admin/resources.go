package admin

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// Admin reads and writes of queues (docs/api/admin-api.md §1). Counters are computed live by the store.

// ListQueues lists every queue with its counters, newest first.
func (a *Admin) ListQueues(ctx context.Context) ([]mq.QueueSummary, error) {
	return a.store.QueueSummaries(ctx)
}

// LabelSummaries groups the queues by task (byTask) or by namespace.
func (a *Admin) LabelSummaries(ctx context.Context, byTask bool) ([]mq.LabelSummary, error) {
	return a.store.LabelSummaries(ctx, byTask)
}

// QueueDetail returns one queue and its partitions; found is false for an unknown queue.
func (a *Admin) QueueDetail(ctx context.Context, name string) (mq.QueueInfo, []mq.PartitionInfo, bool, error) {
	return a.store.QueueDetail(ctx, name)
}

// Overview returns the system summary.
func (a *Admin) Overview(ctx context.Context) (mq.Overview, error) {
	return a.store.Overview(ctx)
}

// DeleteQueue removes a queue with everything of it; existed is false when there was none.
// The queue's remembered encryption flag is dropped, since a queue of the same name created
// later starts unencrypted.
func (a *Admin) DeleteQueue(ctx context.Context, name string) (existed bool, err error) {
	existed, err = a.store.DeleteQueue(ctx, name)
	a.data.ForgetQueue(name)
	return existed, err
}
