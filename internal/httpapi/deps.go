package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// The wire layer speaks to the rest of queen-go through these interfaces, in the vocabulary
// of package mq only, so it imports neither the store nor the database driver: the
// composition root (internal/app) passes the broker and the read side in.

// DataPath is the data path (*broker.Broker): push, pop, ack, lease, transaction, configure.
type DataPath interface {
	Push(ctx context.Context, items []mq.PushItem, producerSub *string) ([]mq.PushResult, error)
	Pop(ctx context.Context, r mq.PopRequest) (mq.PopResult, error)
	Ack(ctx context.Context, items []mq.AckItem) ([]mq.AckResult, error)
	ExtendLease(ctx context.Context, leaseID string, seconds int) (expiresAt time.Time, state string, err error)
	Transaction(ctx context.Context, entries []mq.TxnEntry, requiredLeases []string, producerSub *string) (mq.TxnOutcome, error)
	Configure(ctx context.Context, name string, namespace, task *string, opts mq.QueueOptions) (queueID, partitionID, ns, tk string, err error)
	// Ping checks that the database answers: nil, or mq.ErrBusy when the broker had no
	// connection in time but the outage probe reached the database (docs/api/operations.md §9.7),
	// or mq.ErrUnavailable.
	Ping(ctx context.Context) error

	// Streams (docs/api/streams.md).
	StreamRegister(ctx context.Context, r mq.StreamRegistration) (mq.StreamRegistered, error)
	StreamCycle(ctx context.Context, c mq.StreamCycle, producerSub *string) (mq.StreamCycleOutcome, error)
	StreamState(ctx context.Context, q mq.StreamStateQuery) ([]mq.StreamStateRow, error)
	StreamQueries(ctx context.Context) ([]mq.StreamQuery, error)
	StreamDelete(ctx context.Context, name string) (existed bool, stateRows int64, err error)
}

// ReadSide is the read side and the operator actions (*admin.Admin).
type ReadSide interface {
	// Now is the time status windows are taken against: the store's clock when tests set one.
	Now() time.Time

	// Listings answer one page (docs/api/admin-api.md, Listing parameters): at most
	// mq.MaxListRows rows, cut in the database.
	ListQueues(ctx context.Context, f mq.QueueListFilter) (mq.QueueList, error)
	LabelSummaries(ctx context.Context, f mq.LabelFilter) (mq.LabelList, error)
	Overview(ctx context.Context) (mq.Overview, error)
	DeleteQueue(ctx context.Context, name string) (existed bool, err error)

	ListMessages(ctx context.Context, f mq.MessageFilter) ([]mq.ListedMessage, error)
	MessageDetail(ctx context.Context, partitionID, transactionID string) (mq.MessageDetail, bool, error)
	DeleteMessage(ctx context.Context, partitionID, transactionID string) (bool, error)
	ListDLQ(ctx context.Context, f mq.DLQFilter) ([]mq.DLQEntry, int64, error)

	// Operator routes (admin_ops.go).
	ListPartitions(ctx context.Context, f mq.PartitionFilter) ([]mq.PartitionRow, int64, *time.Time, error)
	DeleteDLQEntry(ctx context.Context, id string) (existed bool, err error)
	DeleteDLQ(ctx context.Context, sel mq.DLQSelection) (mq.DLQDeleteResult, error)
	MoveToDLQ(ctx context.Context, partitionID, transactionID, group, reason string) ([]mq.GroupAction, bool, error)
	ClearQueue(ctx context.Context, queue, partition string) (res mq.ClearResult, queueFound, partitionFound bool, err error)
	// Requeue and retry (admin_requeue.go).
	RequeueDLQ(ctx context.Context, req mq.DLQRequeueRequest) (mq.DLQRequeueResult, error)
	RetryMessage(ctx context.Context, partitionID, transactionID, group string) ([]mq.GroupAction, bool, error)

	AddTrace(ctx context.Context, t mq.TraceRecord) (id string, found bool, err error)
	MessageTraces(ctx context.Context, partitionID, transactionID string) ([]mq.Trace, error)
	TracesByName(ctx context.Context, name string, p mq.Page) ([]mq.NamedTrace, int64, error)
	// TraceNames lists the names holding search (dashboard M11; "": all).
	TraceNames(ctx context.Context, search string, p mq.Page) ([]mq.TraceName, int64, error)

	ConsumerGroups(ctx context.Context, f mq.GroupFilter) ([]mq.GroupSummary, error)
	LaggingPairs(ctx context.Context, f mq.LagFilter) ([]mq.PairLag, error)
	ConsumerGroupPairs(ctx context.Context, group, queue string, p mq.Page) ([]mq.PairLag, bool, error)
	DeleteConsumerGroup(ctx context.Context, group, queue string, metadata bool) (int, error)
	SetSubscriptionTimestamp(ctx context.Context, group string, ts time.Time) (int, error)
	SeekQueue(ctx context.Context, group, queue string, ts *time.Time) (updated int, found bool, err error)
	SeekPartition(ctx context.Context, group, queue, partition string) (movedTo *string, found bool, err error)

	StatusOverview(ctx context.Context, f mq.QueueFilter, w mq.Window) (mq.StatusOverview, error)
	// StatusQueue feeds both queue detail routes (/resources/queues/:queue, /status/queues/:queue).
	StatusQueue(ctx context.Context, name string, f mq.PartitionPage) (q mq.QueueStatus, found bool, err error)
	StatusQueueMessages(ctx context.Context, queue string, limit, offset int) ([]mq.QueueMessage, bool, error)
	MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, start, to time.Time) ([]mq.CountPoint, error)
	WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error)
	// The per-queue series answer one queue, or the limit queues their ranking puts first
	// (at most mq.MaxSeriesQueues) with how many were left out (docs/api/admin-api.md §6).
	QueueOps(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.QueuePoint, error)
	QueueLag(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.DepthPoint, error)
	ParkedSeries(ctx context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.ParkedPoint], error)
	RetentionHistory(ctx context.Context, w mq.Window, queue string, limit int) ([]mq.RetentionRun, []mq.RetentionTotal, int, error)
	PostgresStats(ctx context.Context) (mq.PostgresStats, error)
	// JobSummaries reads the background jobs' runs across instances (dashboard M12).
	JobSummaries(ctx context.Context) ([]mq.JobSummary, error)
}

// Metrics is this instance's collector (*metrics.Collector).
type Metrics interface {
	// Request counts one routed request.
	Request()
	// ObserveRequest records one routed request's duration by method, route pattern and status
	// code (queen_http_request_duration_seconds).
	ObserveRequest(method, route string, code int, took time.Duration)
	// Overload counts one routed request answered as load, not outage, by route pattern
	// (queen_overload_answers_total, docs/api/operations.md §9.7).
	Overload(route string)
	// Snapshot reads this instance's figures without the database (GET /metrics).
	Snapshot() mq.InstanceMetrics
	// Handler serves the Prometheus exposition (GET /metrics/prometheus).
	Handler() http.Handler
	// Flush writes the current minute's figures to the database.
	Flush(ctx context.Context) error
}

// Jobs is the background jobs' runner (*maintenance.Runner).
type Jobs interface {
	// RefreshStats recomputes the counters now; ran is false when another run held the lock.
	RefreshStats(ctx context.Context) (res mq.StatsRefresh, ran bool, err error)
	// States reports what this instance knows of each job, for /health.
	States() map[string]mq.JobState
	// Intervals reports each job's interval on this instance (GET /api/v1/system/jobs).
	Intervals() map[string]time.Duration
}
