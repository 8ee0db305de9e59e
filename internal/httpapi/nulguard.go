package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// nulGuard wraps the read side so that a lookup by a name holding U+0000 is answered without
// the database: PostgreSQL text cannot hold that character and refuses the whole statement,
// which used to come back as a 500. Such a name matches nothing (docs/api/README.md §2.9), so each method
// answers what it answers for an unknown name: not found, nothing deleted, an empty list.
// Names from a body never get here (the routes refuse them with a 400); names from a path or
// a query do, and would otherwise reach the database.
type nulGuard struct{ ReadSide }

// DeleteQueue implements ReadSide.
func (g nulGuard) DeleteQueue(ctx context.Context, name string) (bool, error) {
	if hasNUL(name) {
		return false, nil
	}
	return g.ReadSide.DeleteQueue(ctx, name)
}

// ListMessages implements ReadSide.
func (g nulGuard) ListMessages(ctx context.Context, f mq.MessageFilter) ([]mq.ListedMessage, error) {
	if hasNUL(f.Queue, f.Partition, f.Namespace, f.Task, f.Status, f.TransactionID) {
		return nil, nil
	}
	return g.ReadSide.ListMessages(ctx, f)
}

// MessageDetail implements ReadSide.
func (g nulGuard) MessageDetail(ctx context.Context, partitionID, transactionID string) (mq.MessageDetail, bool, error) {
	if hasNUL(partitionID, transactionID) {
		return mq.MessageDetail{}, false, nil
	}
	return g.ReadSide.MessageDetail(ctx, partitionID, transactionID)
}

// DeleteMessage implements ReadSide.
func (g nulGuard) DeleteMessage(ctx context.Context, partitionID, transactionID string) (bool, error) {
	if hasNUL(partitionID, transactionID) {
		return false, nil
	}
	return g.ReadSide.DeleteMessage(ctx, partitionID, transactionID)
}

// ListDLQ implements ReadSide.
func (g nulGuard) ListDLQ(ctx context.Context, f mq.DLQFilter) ([]mq.DLQEntry, int64, error) {
	if hasNUL(f.Queue, f.Group, f.Partition, f.Error) {
		return nil, 0, nil
	}
	return g.ReadSide.ListDLQ(ctx, f)
}

// MoveToDLQ implements ReadSide.
func (g nulGuard) MoveToDLQ(ctx context.Context, partitionID, transactionID, group, reason string) ([]mq.GroupAction, bool, error) {
	if hasNUL(partitionID, transactionID) {
		return nil, false, nil
	}
	return g.ReadSide.MoveToDLQ(ctx, partitionID, transactionID, group, reason)
}

// ClearQueue implements ReadSide.
func (g nulGuard) ClearQueue(ctx context.Context, queue, partition string) (mq.ClearResult, bool, bool, error) {
	if hasNUL(queue) {
		return mq.ClearResult{}, false, false, nil
	}
	if hasNUL(partition) {
		return mq.ClearResult{}, true, false, nil
	}
	return g.ReadSide.ClearQueue(ctx, queue, partition)
}

// AddTrace implements ReadSide.
func (g nulGuard) AddTrace(ctx context.Context, t mq.TraceRecord) (string, bool, error) {
	if hasNUL(t.PartitionID, t.TransactionID) {
		return "", false, nil
	}
	return g.ReadSide.AddTrace(ctx, t)
}

// MessageTraces implements ReadSide.
func (g nulGuard) MessageTraces(ctx context.Context, partitionID, transactionID string) ([]mq.Trace, error) {
	if hasNUL(partitionID, transactionID) {
		return nil, nil
	}
	return g.ReadSide.MessageTraces(ctx, partitionID, transactionID)
}

// TracesByName implements ReadSide.
func (g nulGuard) TracesByName(ctx context.Context, name string, p mq.Page) ([]mq.NamedTrace, int64, error) {
	if hasNUL(name) {
		return nil, 0, nil
	}
	return g.ReadSide.TracesByName(ctx, name, p)
}

// ConsumerGroupPairs implements ReadSide. A queue naming nothing keeps no row, and the group
// is still found when it has cursors elsewhere.
func (g nulGuard) ConsumerGroupPairs(ctx context.Context, group, queue string, p mq.Page) ([]mq.PairLag, bool, error) {
	if hasNUL(group) {
		return nil, false, nil
	}
	if hasNUL(queue) {
		queue, p.Limit = "", 0
	}
	return g.ReadSide.ConsumerGroupPairs(ctx, group, queue, p)
}

// TraceNames implements ReadSide.
func (g nulGuard) TraceNames(ctx context.Context, search string, p mq.Page) ([]mq.TraceName, int64, error) {
	if hasNUL(search) {
		return nil, 0, nil
	}
	return g.ReadSide.TraceNames(ctx, search, p)
}

// LabelSummaries implements ReadSide.
func (g nulGuard) LabelSummaries(ctx context.Context, f mq.LabelFilter) (mq.LabelList, error) {
	if hasNUL(f.Search) {
		return mq.LabelList{Labels: []mq.LabelSummary{}}, nil
	}
	return g.ReadSide.LabelSummaries(ctx, f)
}

// ConsumerGroups implements ReadSide.
func (g nulGuard) ConsumerGroups(ctx context.Context, f mq.GroupFilter) ([]mq.GroupSummary, error) {
	if hasNUL(f.Queue, f.Group, f.Search) {
		return nil, nil
	}
	return g.ReadSide.ConsumerGroups(ctx, f)
}

// LaggingPairs implements ReadSide.
func (g nulGuard) LaggingPairs(ctx context.Context, f mq.LagFilter) ([]mq.PairLag, error) {
	if hasNUL(f.Queue, f.Group) {
		return nil, nil
	}
	return g.ReadSide.LaggingPairs(ctx, f)
}

// DeleteConsumerGroup implements ReadSide.
func (g nulGuard) DeleteConsumerGroup(ctx context.Context, group, queue string, metadata bool) (int, error) {
	if hasNUL(group, queue) {
		return 0, nil
	}
	return g.ReadSide.DeleteConsumerGroup(ctx, group, queue, metadata)
}

// SetSubscriptionTimestamp implements ReadSide.
func (g nulGuard) SetSubscriptionTimestamp(ctx context.Context, group string, ts time.Time) (int, error) {
	if hasNUL(group) {
		return 0, nil
	}
	return g.ReadSide.SetSubscriptionTimestamp(ctx, group, ts)
}

// SeekQueue implements ReadSide.
func (g nulGuard) SeekQueue(ctx context.Context, group, queue string, ts *time.Time) (int, bool, error) {
	if hasNUL(group, queue) {
		return 0, false, nil
	}
	return g.ReadSide.SeekQueue(ctx, group, queue, ts)
}

// SeekPartition implements ReadSide.
func (g nulGuard) SeekPartition(ctx context.Context, group, queue, partition string) (*string, bool, error) {
	if hasNUL(group, queue, partition) {
		return nil, false, nil
	}
	return g.ReadSide.SeekPartition(ctx, group, queue, partition)
}

// StatusOverview implements ReadSide. A filter naming nothing is the overview of no queue.
func (g nulGuard) StatusOverview(ctx context.Context, f mq.QueueFilter, w mq.Window) (mq.StatusOverview, error) {
	if hasNUL(f.Queue, f.Namespace, f.Task) {
		f = nothingFilter
	}
	return g.ReadSide.StatusOverview(ctx, f, w)
}

// ListQueues implements ReadSide.
func (g nulGuard) ListQueues(ctx context.Context, f mq.QueueListFilter) (mq.QueueList, error) {
	if hasNUL(f.Namespace, f.Task, f.Search) {
		return mq.QueueList{Queues: []mq.QueueSummary{}}, nil
	}
	return g.ReadSide.ListQueues(ctx, f)
}

// StatusQueue implements ReadSide.
func (g nulGuard) StatusQueue(ctx context.Context, name string, f mq.PartitionPage) (mq.QueueStatus, bool, error) {
	if hasNUL(name) {
		return mq.QueueStatus{}, false, nil
	}
	if hasNUL(f.Search) {
		f.Search, f.Page.Limit = "", 0 // the queue still answers; no partition matches
		q, found, err := g.ReadSide.StatusQueue(ctx, name, f)
		q.PartitionCount = 0
		return q, found, err
	}
	return g.ReadSide.StatusQueue(ctx, name, f)
}

// StatusQueueMessages implements ReadSide.
func (g nulGuard) StatusQueueMessages(ctx context.Context, queue string, limit, offset int) ([]mq.QueueMessage, bool, error) {
	if hasNUL(queue) {
		return nil, false, nil
	}
	return g.ReadSide.StatusQueueMessages(ctx, queue, limit, offset)
}

// MessagesWritten implements ReadSide.
func (g nulGuard) MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, from, to time.Time) ([]mq.CountPoint, error) {
	if hasNUL(f.Queue, f.Namespace, f.Task) {
		return nil, nil
	}
	return g.ReadSide.MessagesWritten(ctx, f, unit, from, to)
}

// WorkerSeries implements ReadSide.
func (g nulGuard) WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	if hasNUL(hostname, workerID) {
		return nil, nil
	}
	return g.ReadSide.WorkerSeries(ctx, w, hostname, workerID)
}

// QueueOps implements ReadSide.
func (g nulGuard) QueueOps(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.QueuePoint, error) {
	if hasNUL(queue) {
		return mq.QueueSeriesSet[mq.QueuePoint]{}, nil, nil
	}
	return g.ReadSide.QueueOps(ctx, w, queue, limit)
}

// ParkedSeries implements ReadSide.
func (g nulGuard) ParkedSeries(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.ParkedPoint], error) {
	if hasNUL(queue) {
		return mq.QueueSeriesSet[mq.ParkedPoint]{}, nil
	}
	return g.ReadSide.ParkedSeries(ctx, w, queue, limit)
}

// QueueLag implements ReadSide.
func (g nulGuard) QueueLag(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.DepthPoint, error) {
	if hasNUL(queue) {
		return mq.QueueSeriesSet[mq.QueuePoint]{}, nil, nil
	}
	return g.ReadSide.QueueLag(ctx, w, queue, limit)
}

// RetentionHistory implements ReadSide.
func (g nulGuard) RetentionHistory(ctx context.Context, w mq.Window, queue string, limit int) ([]mq.RetentionRun, []mq.RetentionTotal, int, error) {
	if hasNUL(queue) {
		return nil, nil, 0, nil
	}
	return g.ReadSide.RetentionHistory(ctx, w, queue, limit)
}

// nothingFilter matches no queue: no queue name is longer than 255 characters, since every
// route that creates a queue refuses longer names. The overview is still read, so its shape
// (buckets, workers) is the one an unknown queue name gets.
var nothingFilter = mq.QueueFilter{Queue: strings.Repeat("-", maxNameChars+1)}
