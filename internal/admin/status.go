package admin

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Status and analytics reads (docs/api/admin-api.md §5, §6). Counters come from the stats job's tables
// and rates from the per-minute metrics, so none of these scans messages.

// StatusOverview reads the status of the queues matching f over w (plan it with
// mq.SeriesWindow); a window whose series would exceed mq.MaxSeriesPoints is refused.
func (a *Admin) StatusOverview(ctx context.Context, f mq.QueueFilter, w mq.Window) (mq.StatusOverview, error) {
	if err := w.Check(); err != nil {
		return mq.StatusOverview{}, err
	}
	return a.store.StatusOverview(ctx, f, w.SeriesFrom(), w.To, w.BucketMinutes)
}

// StatusQueue reads one queue with its options, totals and one page of its partitions (both
// queue detail routes); found is false for an unknown queue.
func (a *Admin) StatusQueue(ctx context.Context, name string, f mq.PartitionPage) (q mq.QueueStatus, found bool, err error) {
	f.Page = bounded(f.Page)
	return a.store.StatusQueue(ctx, name, f)
}

// MessagesWritten counts messages written per unit (minute, hour, day) into matching queues,
// from the bucket holding start to to (plan both with mq.IntervalWindow); more than
// mq.MaxSeriesPoints buckets are refused.
func (a *Admin) MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, start, to time.Time) ([]mq.CountPoint, error) {
	if start.After(to) {
		return nil, mq.ErrInvalidTimeRange
	}
	if mq.IntervalPoints(start, to, unit) > mq.MaxSeriesPoints {
		return nil, mq.ErrWindowTooLarge
	}
	return a.store.MessagesWritten(ctx, f, unit, start, to)
}

// WorkerSeries reads per-instance figures in w.
func (a *Admin) WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	return a.store.WorkerSeries(ctx, w, hostname, workerID)
}

// seriesQueues bounds a per-queue series (docs/api/admin-api.md §6): with a queue filter that
// one queue; otherwise the limit queues rank puts first (limit at most mq.MaxSeriesQueues,
// negative: mq.DefaultSeriesQueues), with how many queues were left out. only is nil when
// every queue is answered.
func (a *Admin) seriesQueues(ctx context.Context, w mq.Window, queue string, rank mq.QueueRank, limit int) (only []string, omitted int, err error) {
	if err := w.Check(); err != nil {
		return nil, 0, err
	}
	if queue != "" {
		return nil, 0, nil
	}
	names, total, err := a.store.TopQueues(ctx, w, rank, SeriesQueues(limit))
	if err != nil {
		return nil, 0, err
	}
	if names == nil {
		names = []string{} // an empty list answers no queue, unlike nil (every queue)
	}
	return names, max(total-len(names), 0), nil
}

// SeriesQueues is how many queues a per-queue analytics route answers for the limit asked:
// negative is the default, above mq.MaxSeriesQueues is mq.MaxSeriesQueues.
func SeriesQueues(limit int) int {
	if limit < 0 {
		return mq.DefaultSeriesQueues
	}
	return min(limit, mq.MaxSeriesQueues)
}

// QueueOps reads per-queue operation figures in w for queue, or for the limit busiest queues
// (pushed plus popped) with other summing the queues left out.
func (a *Admin) QueueOps(ctx context.Context, w mq.Window, queue string, limit int) (set mq.QueueSeriesSet[mq.QueuePoint], other []mq.QueuePoint, err error) {
	only, omitted, err := a.seriesQueues(ctx, w, queue, mq.RankTraffic, limit)
	if err != nil {
		return set, nil, err
	}
	set.Omitted = omitted
	if set.Points, err = a.store.QueueSeries(ctx, w, queue, only); err != nil || omitted == 0 {
		return set, nil, err
	}
	other, err = a.store.QueueSeriesOther(ctx, w, only)
	return set, other, err
}

// QueueLag reads pop lag (metrics) and consumer lag and depth (stats history) in w for queue,
// or for the limit queues with the largest lag.
func (a *Admin) QueueLag(ctx context.Context, w mq.Window, queue string, limit int) (set mq.QueueSeriesSet[mq.QueuePoint], depth []mq.DepthPoint, err error) {
	only, omitted, err := a.seriesQueues(ctx, w, queue, mq.RankLag, limit)
	if err != nil {
		return set, nil, err
	}
	set.Omitted = omitted
	if set.Points, err = a.store.QueueSeries(ctx, w, queue, only); err != nil {
		return set, nil, err
	}
	depth, err = a.store.DepthSeries(ctx, w, queue, only)
	return set, depth, err
}

// ParkedSeries reads parked pops per queue and instance in w for queue, or for the limit
// busiest queues that had parked pops.
func (a *Admin) ParkedSeries(ctx context.Context, w mq.Window, queue string, limit int) (set mq.QueueSeriesSet[mq.ParkedPoint], err error) {
	only, omitted, err := a.seriesQueues(ctx, w, queue, mq.RankParked, limit)
	if err != nil {
		return set, err
	}
	set.Omitted = omitted
	set.Points, err = a.store.ParkedSeries(ctx, w, queue, only)
	return set, err
}

// RetentionHistory reads what retention and eviction removed in w: the newest mq.MaxListRows
// runs of queue, or of the limit queues that lost the most messages, the totals per kind over
// every queue, and how many queues were left out.
func (a *Admin) RetentionHistory(ctx context.Context, w mq.Window, queue string, limit int) (runs []mq.RetentionRun, totals []mq.RetentionTotal, omitted int, err error) {
	only, omitted, err := a.seriesQueues(ctx, w, queue, mq.RankRemoved, limit)
	if err != nil {
		return nil, nil, 0, err
	}
	runs, totals, err = a.store.RetentionHistory(ctx, w.SeriesFrom(), w.To, queue, mq.MaxListRows, only)
	return runs, totals, omitted, err
}
