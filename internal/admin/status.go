package admin

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Status and analytics reads (docs/api/admin-api.md §5, §6). Counters come from the stats job's tables
// and rates from the per-minute metrics, so none of these scans messages.

// Now is the time the broker works with: the store's clock when tests set one.
func (a *Admin) Now() time.Time { return a.store.Now() }

// StatusOverview reads the status of the queues matching f between from and to.
func (a *Admin) StatusOverview(ctx context.Context, f mq.QueueFilter, from, to time.Time, bucketMinutes int) (mq.StatusOverview, error) {
	return a.store.StatusOverview(ctx, f, from, to, bucketMinutes)
}

// StatusQueues lists queues by name with their counters.
func (a *Admin) StatusQueues(ctx context.Context, namespace, task string, limit, offset int) ([]mq.QueueSummary, error) {
	return a.store.StatusQueues(ctx, namespace, task, limit, offset)
}

// StatusQueue reads one queue with its partitions; found is false for an unknown queue.
func (a *Admin) StatusQueue(ctx context.Context, name string) (q mq.QueueStatus, found bool, err error) {
	return a.store.StatusQueue(ctx, name)
}

// StatusQueueMessages lists a queue's messages, newest first; found is false for an unknown queue.
func (a *Admin) StatusQueueMessages(ctx context.Context, queue string, limit, offset int) ([]mq.QueueMessage, bool, error) {
	return a.store.StatusQueueMessages(ctx, queue, limit, offset)
}

// MessagesWritten counts messages written per unit (minute, hour, day) into matching queues.
func (a *Admin) MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, from, to time.Time) ([]mq.CountPoint, error) {
	return a.store.MessagesWritten(ctx, f, unit, from, to)
}

// WorkerSeries reads per-instance figures in w.
func (a *Admin) WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	return a.store.WorkerSeries(ctx, w, hostname, workerID)
}

// QueueSeries reads per-queue figures in w.
func (a *Admin) QueueSeries(ctx context.Context, w mq.Window, queue string) ([]mq.QueuePoint, error) {
	return a.store.QueueSeries(ctx, w, queue)
}

// ParkedSeries reads parked pops per queue and instance in w.
func (a *Admin) ParkedSeries(ctx context.Context, w mq.Window, queue string) ([]mq.ParkedPoint, error) {
	return a.store.ParkedSeries(ctx, w, queue)
}

// DepthSeries reads consumer lag and depth per queue in w.
func (a *Admin) DepthSeries(ctx context.Context, w mq.Window, queue string) ([]mq.DepthPoint, error) {
	return a.store.DepthSeries(ctx, w, queue)
}

// RetentionHistory reads what retention and eviction removed between from and to.
func (a *Admin) RetentionHistory(ctx context.Context, from, to time.Time, queue string, limit int) ([]mq.RetentionRun, []mq.RetentionTotal, error) {
	return a.store.RetentionHistory(ctx, from, to, queue, limit)
}

// PostgresStats reads PostgreSQL's figures for our database and schema.
func (a *Admin) PostgresStats(ctx context.Context) (mq.PostgresStats, error) {
	return a.store.PostgresStats(ctx)
}
