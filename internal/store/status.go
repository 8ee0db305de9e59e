package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

var (
	sqlStatusCounts    = queryOf[statusCountsRow]("status_counts")
	sqlStatusQueueList = queryOf[queueRefRow]("status_queue_list")
	sqlStatusTopErrors = queryOf[errorCountRow]("status_top_errors")
	sqlStatusThrough   = queryOf[throughputRow]("status_throughput")
	sqlStatusWindow    = queryOf[windowTotalsRow]("status_window")
	sqlStatusWorkers   = queryOf[workerSeenRow]("status_workers")
)

// Rows of the status statements, read by column name. Those with the fields of an mq type, in
// its order, convert to it: the compiler keeps the two in step.
type (
	statusCountsRow struct {
		Total            int64      `db:"total"`
		Unconsumed       int64      `db:"unconsumed"`
		Processing       int64      `db:"processing"`
		DeadLetter       int64      `db:"dead_letter"`
		DLQPartitions    int64      `db:"dlq_partitions"`
		ActiveLeases     int64      `db:"active_leases"`
		LeasedPartitions int64      `db:"leased_partitions"`
		LeasedMessages   int64      `db:"leased_messages"`
		StatsAt          *time.Time `db:"stats_at"`
	}
	queueRefRow struct {
		ID         string `db:"id"`
		Name       string `db:"name"`
		Namespace  string `db:"namespace"`
		Task       string `db:"task"`
		Partitions int64  `db:"partitions"`
		Consumed   int64  `db:"consumed"`
	}
	errorCountRow struct {
		Error string `db:"error"`
		Count int64  `db:"count"`
	}
	throughputRow struct {
		At         time.Time `db:"bucket"`
		Ingested   int64     `db:"ingested"`
		Processed  int64     `db:"processed"`
		Popped     int64     `db:"popped"`
		AvgLagMs   float64   `db:"avg_lag_ms"`
		MaxLagMs   float64   `db:"max_lag_ms"`
		DBErrors   int64     `db:"db_errors"`
		AckFailed  int64     `db:"ack_failed"`
		DLQ        int64     `db:"dlq"`
		CPUUserPct float64   `db:"cpu_user_pct"`
		CPUSysPct  float64   `db:"cpu_sys_pct"`
		RSSBytes   int64     `db:"rss_bytes"`
		PoolActive float64   `db:"pool_active"`
		PoolIdle   float64   `db:"pool_idle"`
		PoolSize   float64   `db:"pool_size"`
	}
	windowTotalsRow struct {
		PushRequests int64 `db:"push_requests"`
		PopRequests  int64 `db:"pop_requests"`
		AckRequests  int64 `db:"ack_requests"`
		PushMessages int64 `db:"push_messages"`
		PopMessages  int64 `db:"pop_messages"`
		AckMessages  int64 `db:"ack_messages"`
		AckSuccess   int64 `db:"ack_success"`
		AckFailed    int64 `db:"ack_failed"`
		DLQ          int64 `db:"dlq"`
		DBErrors     int64 `db:"db_errors"`
	}
	workerSeenRow struct {
		Hostname string    `db:"hostname"`
		WorkerID string    `db:"worker_id"`
		PID      int       `db:"pid"`
		LastSeen time.Time `db:"last_seen"`
	}
)

// StatusOverview reads the status of the queues matching f from the stats tables and the
// per-minute metrics between from and to, in buckets of bucketMinutes: one round trip.
func (s *Store) StatusOverview(ctx context.Context, f mq.QueueFilter, from, to time.Time, bucketMinutes int) (mq.StatusOverview, error) {
	var o mq.StatusOverview
	window := pgx.StrictNamedArgs{"from": from, "to": to}
	err := s.queryBatch(ctx,
		sqlStatusCounts.batch(filterArgs(f), func(r statusCountsRow) {
			o.Counters = mq.Counters{Total: r.Total, Unconsumed: r.Unconsumed, Processing: r.Processing, DeadLetter: r.DeadLetter}
			o.DLQPartitions, o.ActiveLeases, o.StatsAt = r.DLQPartitions, r.ActiveLeases, r.StatsAt
			o.LeasedPartitions, o.LeasedMessages = r.LeasedPartitions, r.LeasedMessages
		}),
		sqlStatusQueueList.batch(filterArgs(f, window), func(r queueRefRow) {
			o.Queues = append(o.Queues, mq.QueueRef(r))
		}),
		sqlStatusTopErrors.batch(filterArgs(f), func(r errorCountRow) {
			o.TopErrors = append(o.TopErrors, mq.ErrorCount(r))
		}),
		sqlStatusThrough.batch(filterArgs(f, window, pgx.StrictNamedArgs{"bucket_minutes": bucketMinutes}), func(r throughputRow) {
			o.Throughput = append(o.Throughput, mq.ThroughputPoint(r))
		}),
		sqlStatusWindow.batch(filterArgs(f, window), func(r windowTotalsRow) { o.Window = mq.WindowTotals(r) }),
		sqlStatusWorkers.batch(window, func(r workerSeenRow) {
			o.Workers = append(o.Workers, mq.WorkerSeen(r))
		}),
	)
	return o, wrap("status", err)
}

var sqlStatusQueue = queryOf[statusQueueRow]("status_queue")

// statusQueueRow is a row of status_queue: a queue's configuration and counters.
type statusQueueRow struct {
	ID              string    `db:"id"`
	Name            string    `db:"name"`
	Namespace       string    `db:"namespace"`
	Task            string    `db:"task"`
	Priority        int       `db:"priority"`
	CreatedAt       time.Time `db:"created_at"`
	LeaseTime       int       `db:"lease_time"`
	RetryLimit      int       `db:"retry_limit"`
	RetryDelay      int       `db:"retry_delay"`
	TTL             int       `db:"ttl"`
	MaxSize         int       `db:"max_size"`
	DeadLetterQueue bool      `db:"dead_letter_queue"`
	Total           int64     `db:"total"`
	Unconsumed      int64     `db:"unconsumed"`
	Processing      int64     `db:"processing"`
	DeadLetter      int64     `db:"dead_letter"`
}

const (
	sqlQueuePartitionCount = `SELECT qg_queue_partition_count(p_queue => $1, p_search => $2)`
	sqlQueuePartitionPage  = `SELECT * FROM qg_queue_partition_page(p_queue => $1, p_search => $2, p_sort => $3,
		p_desc => $4, p_limit => $5, p_offset => $6)`
	sqlQueueRow = `SELECT qg_queue_row(p_queue => $1)`
)

// partitionStatusRow is a row of qg_queue_partition_page: a partition and its counters
// (pending: not yet leased).
type partitionStatusRow struct {
	ID             string     `db:"id"`
	Name           string     `db:"name"`
	CreatedAt      time.Time  `db:"created_at"`
	Total          int64      `db:"total"`
	Pending        int64      `db:"pending"`
	Processing     int64      `db:"processing"`
	DeadLetter     int64      `db:"dead_letter"`
	ConsumerGroups int        `db:"consumer_groups"`
	ActiveLeases   int        `db:"active_leases"`
	Consumed       int64      `db:"consumed"`
	Batches        int64      `db:"batches"`
	LastActivity   *time.Time `db:"last_activity"`
	Oldest         *time.Time `db:"oldest_at"`
	Newest         *time.Time `db:"newest_at"`
	MaxTimeLag     int64      `db:"max_time_lag"`
}

var partitionStatusRows = callOf[partitionStatusRow](sqlQueuePartitionPage)

// queuePartitionPageArgs are the parameters of qg_queue_partition_page.
type queuePartitionPageArgs struct {
	Queue         string
	Search        any // nil: every partition
	Sort          string
	Desc          bool
	Limit, Offset int
}

func (a queuePartitionPageArgs) args() []any {
	return []any{a.Queue, a.Search, a.Sort, a.Desc, a.Limit, a.Offset}
}

// StatusQueue reads one queue by name with its 16 options, its totals, one page of its
// partitions matching f and how many match; found is false when there is no such queue.
// Counters come from the stats job. The statements go as one batch, so they see one snapshot.
func (s *Store) StatusQueue(ctx context.Context, name string, f mq.PartitionPage) (q mq.QueueStatus, found bool, err error) {
	var row []byte
	page := queuePartitionPageArgs{Queue: name, Search: nullIfEmpty(f.Search), Sort: f.Sort, Desc: f.Desc,
		Limit: f.Page.Limit, Offset: f.Page.Offset}
	q.Partitions = []mq.PartitionStatus{}
	err = s.queryBatch(ctx,
		sqlStatusQueue.batch(pgx.StrictNamedArgs{"queue": name}, func(r statusQueueRow) {
			found = true
			q.ID, q.Name, q.Namespace, q.Task, q.Priority, q.CreatedAt = r.ID, r.Name, r.Namespace, r.Task, r.Priority, r.CreatedAt
			q.LeaseTime, q.RetryLimit, q.RetryDelay, q.TTL, q.MaxSize = r.LeaseTime, r.RetryLimit, r.RetryDelay, r.TTL, r.MaxSize
			q.DeadLetterQueue = r.DeadLetterQueue
			q.Totals = mq.Counters{Total: r.Total, Unconsumed: r.Unconsumed, Processing: r.Processing, DeadLetter: r.DeadLetter}
		}),
		batchQuery{sqlQueueRow, []any{name}, scanInto(&row)},
		batchQuery{sqlQueuePartitionCount, []any{name, page.Search}, scanInto(&q.PartitionCount)},
		partitionStatusRows.call(page.args(), func(r partitionStatusRow) {
			q.Partitions = append(q.Partitions, mq.PartitionStatus{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt,
				Counters: mq.Counters{Total: r.Total, Unconsumed: r.Pending + r.Processing, Processing: r.Processing,
					DeadLetter: r.DeadLetter},
				ConsumerGroups: r.ConsumerGroups, ActiveLeases: r.ActiveLeases, Consumed: r.Consumed, Batches: r.Batches,
				LastActivity: r.LastActivity, Oldest: r.Oldest, Newest: r.Newest, MaxTimeLag: r.MaxTimeLag})
		}),
	)
	if err == nil && found {
		q.Options, err = optionsFromRow(row)
	}
	return q, found, wrap("status queue", err)
}

// optionsFromRow reads the 16 options from a queue row as JSON (column names as keys), by the
// columns mq.OptionTable names, so the list of options is kept in one place.
func optionsFromRow(row []byte) (mq.QueueOptions, error) {
	var o mq.QueueOptions
	var cols map[string]json.RawMessage
	if err := json.Unmarshal(row, &cols); err != nil {
		return o, fmt.Errorf("queue row: %w", err)
	}
	for _, opt := range mq.OptionTable {
		var err error
		if opt.IsBool() {
			err = json.Unmarshal(cols[opt.Column], opt.Bool(&o))
		} else {
			err = json.Unmarshal(cols[opt.Column], opt.Int(&o))
		}
		if err != nil {
			return o, fmt.Errorf("queue option %s: %w", opt.Key, err)
		}
	}
	return o, nil
}

var (
	sqlQueueExists    = queryOf[queueExistsRow]("queue_exists")
	sqlStatusMessages = queryOf[queueMessageRow]("status_queue_messages")
)

type (
	queueExistsRow struct {
		Found bool `db:"found"`
	}
	queueMessageRow struct {
		ID            string    `db:"id"`
		TransactionID string    `db:"transaction_id"`
		PartitionID   string    `db:"partition_id"`
		Queue         string    `db:"queue"`
		Partition     string    `db:"partition"`
		Status        string    `db:"status"`
		CreatedAt     time.Time `db:"created_at"`
	}
)

// StatusQueueMessages lists a queue's stored messages, newest first, with their state; found
// is false when there is no such queue.
func (s *Store) StatusQueueMessages(ctx context.Context, queue string, limit, offset int) (out []mq.QueueMessage, found bool, err error) {
	err = s.queryBatch(ctx,
		sqlQueueExists.batch(pgx.StrictNamedArgs{"queue": queue}, func(r queueExistsRow) { found = r.Found }),
		sqlStatusMessages.batch(pgx.StrictNamedArgs{"queue": queue, "limit": limit, "offset": offset, "now": s.nowArg()},
			func(r queueMessageRow) { out = append(out, mq.QueueMessage(r)) }),
	)
	return out, found, wrap("status queue messages", err)
}

var sqlStatusAnalytics = queryOf[countPointRow]("status_analytics")

// countPointRow is a row of status_analytics.
type countPointRow struct {
	At time.Time `db:"bucket"`
	N  int64     `db:"n"`
}

// MessagesWritten counts the messages written per unit (minute, hour or day) between from and
// to into the queues matching f, every bucket included.
func (s *Store) MessagesWritten(ctx context.Context, f mq.QueueFilter, unit string, from, to time.Time) ([]mq.CountPoint, error) {
	out, err := readAll(ctx, s, sqlStatusAnalytics, filterArgs(f, pgx.StrictNamedArgs{"from": from, "to": to, "unit": unit}),
		func(r countPointRow) mq.CountPoint { return mq.CountPoint(r) })
	return out, wrap("messages written", err)
}

// Now is the store's notion of the current time: its clock when one is set, else the
// machine's. Routes use it for default time windows, so tests that move the clock see them move.
func (s *Store) Now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// filterArgs are a queue filter's statement parameters @queue, @namespace and @task (NULL
// when empty), with the parameters of more.
func filterArgs(f mq.QueueFilter, more ...pgx.StrictNamedArgs) pgx.StrictNamedArgs {
	out := pgx.StrictNamedArgs{"queue": nullIfEmpty(f.Queue), "namespace": nullIfEmpty(f.Namespace), "task": nullIfEmpty(f.Task)}
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}
