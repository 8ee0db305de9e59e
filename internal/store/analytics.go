package store

import (
	"context"
	"fmt"
	"time"
)

// Window is a time range read in buckets of BucketMinutes.
type Window struct {
	From, To      time.Time
	BucketMinutes int
}

func (w Window) args(filters ...string) []any {
	out := []any{w.From, w.To, w.BucketMinutes}
	for _, f := range filters {
		out = append(out, nullIfEmpty(f))
	}
	return out
}

// WorkerPoint is what one broker instance did in one bucket.
type WorkerPoint struct {
	At                                            time.Time
	Hostname, WorkerID                            string
	PID, Minutes                                  int
	Requests, PushRequests, PopRequests, PopEmpty int64
	AckRequests, Transactions                     int64
	PushMessages, PopMessages, AckMessages        int64
	AckSuccess, AckFailed, DBErrors, DLQ          int64
	PushMsSum, PushMsMax, PopMsSum, PopMsMax      float64
	AckMsSum, AckMsMax, TxnMsSum, TxnMsMax        float64
	CPUUserUs, CPUSysUs, RSSBytes                 int64
	PoolSize, PoolActive, PoolIdle, Parked        int
}

// QueuePoint is what happened on one queue in one bucket, over every instance.
type QueuePoint struct {
	At                                      time.Time
	Queue                                   string
	PushRequests, PushMessages, PopRequests int64
	PopMessages, PopEmpty, AckRequests      int64
	AckMessages, AckSuccess, AckFailed      int64
	Transactions, DLQ                       int64
	AvgLagMs, MaxLagMs                      float64
}

// ParkedPoint is the largest number of parked pops on one queue and instance in one bucket.
type ParkedPoint struct {
	At              time.Time
	Queue, WorkerID string
	Parked          int
}

// DepthPoint is a queue's consumer lag and depth in one bucket, from the stats history.
type DepthPoint struct {
	At                      time.Time
	Queue                   string
	MaxTimeLagSeconds       int64
	AvgPending, AvgInFlight float64
}

var (
	sqlAnalyticsWorkers = query("analytics_workers")
	sqlAnalyticsQueues  = query("analytics_queues")
	sqlAnalyticsParked  = query("analytics_parked")
	sqlAnalyticsDepth   = query("analytics_queue_depth")
)

// WorkerSeries reads per-instance figures in w, optionally for one host name or worker id.
func (s *Store) WorkerSeries(ctx context.Context, w Window, hostname, workerID string) ([]WorkerPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsWorkers, w.args(hostname, workerID), func(r rowScanner, p *WorkerPoint) error {
		return r.Scan(&p.At, &p.Hostname, &p.WorkerID, &p.PID, &p.Minutes, &p.Requests, &p.PushRequests,
			&p.PopRequests, &p.PopEmpty, &p.AckRequests, &p.Transactions, &p.PushMessages, &p.PopMessages,
			&p.AckMessages, &p.AckSuccess, &p.AckFailed, &p.DBErrors, &p.DLQ, &p.PushMsSum, &p.PushMsMax,
			&p.PopMsSum, &p.PopMsMax, &p.AckMsSum, &p.AckMsMax, &p.TxnMsSum, &p.TxnMsMax, &p.CPUUserUs,
			&p.CPUSysUs, &p.RSSBytes, &p.PoolSize, &p.PoolActive, &p.PoolIdle, &p.Parked)
	})
	return out, wrap("worker series", err)
}

// QueueSeries reads per-queue figures in w, optionally for one queue.
func (s *Store) QueueSeries(ctx context.Context, w Window, queue string) ([]QueuePoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsQueues, w.args(queue), func(r rowScanner, p *QueuePoint) error {
		return r.Scan(&p.At, &p.Queue, &p.PushRequests, &p.PushMessages, &p.PopRequests, &p.PopMessages,
			&p.PopEmpty, &p.AckRequests, &p.AckMessages, &p.AckSuccess, &p.AckFailed, &p.Transactions, &p.DLQ,
			&p.AvgLagMs, &p.MaxLagMs)
	})
	return out, wrap("queue series", err)
}

// ParkedSeries reads parked pops per queue and instance in w, optionally for one queue.
func (s *Store) ParkedSeries(ctx context.Context, w Window, queue string) ([]ParkedPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsParked, w.args(queue), func(r rowScanner, p *ParkedPoint) error {
		return r.Scan(&p.At, &p.Queue, &p.WorkerID, &p.Parked)
	})
	return out, wrap("parked series", err)
}

// DepthSeries reads consumer lag and depth per queue in w, optionally for one queue.
func (s *Store) DepthSeries(ctx context.Context, w Window, queue string) ([]DepthPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsDepth, w.args(queue), func(r rowScanner, p *DepthPoint) error {
		return r.Scan(&p.At, &p.Queue, &p.MaxTimeLagSeconds, &p.AvgPending, &p.AvgInFlight)
	})
	return out, wrap("depth series", err)
}

// RetentionRun is what one retention or eviction run removed from one partition under one rule.
type RetentionRun struct {
	RunID                             string
	At                                time.Time
	Queue, Partition, Kind            string
	Removed, Unconsumed, DeadLettered int64
}

// RetentionTotal sums the runs of one kind.
type RetentionTotal struct {
	Kind                              string
	Removed, Unconsumed, DeadLettered int64
}

var (
	sqlAnalyticsRetention = query("analytics_retention")
	sqlRetentionTotals    = query("analytics_retention_totals")
)

// RetentionHistory reads the retention history between from and to, newest first (at most
// limit entries), and its totals per kind; queue "" means every queue.
func (s *Store) RetentionHistory(ctx context.Context, from, to time.Time, queue string, limit int) ([]RetentionRun, []RetentionTotal, error) {
	runs, err := queryAll(ctx, s, sqlAnalyticsRetention, []any{from, to, nullIfEmpty(queue), limit},
		func(r rowScanner, h *RetentionRun) error {
			return r.Scan(&h.RunID, &h.At, &h.Queue, &h.Partition, &h.Kind, &h.Removed, &h.Unconsumed, &h.DeadLettered)
		})
	if err != nil {
		return nil, nil, wrap("retention history", err)
	}
	totals, err := queryAll(ctx, s, sqlRetentionTotals, []any{from, to, nullIfEmpty(queue)},
		func(r rowScanner, t *RetentionTotal) error {
			return r.Scan(&t.Kind, &t.Removed, &t.Unconsumed, &t.DeadLettered)
		})
	return runs, totals, wrap("retention totals", err)
}

// PostgresStats are size and activity figures of the database and of our tables.
type PostgresStats struct {
	Database                          string
	SizeBytes                         int64
	Commits, Rollbacks                int64
	BlocksHit, BlocksRead             int64
	Deadlocks, TempBytes              int64
	Connections, Active, Idle         int64
	IdleInTransaction, WaitingOnLocks int64
	Tables                            []TableStats
}

// TableStats are size and activity figures of one table.
type TableStats struct {
	Name                             string
	Rows, TotalBytes, TableBytes     int64
	IndexBytes, SeqScans, IndexScans int64
	DeadRows                         int64
	LastVacuum                       *time.Time
}

var (
	sqlPostgresDatabase = query("postgres_database")
	sqlPostgresTables   = query("postgres_tables")
)

// PostgresStats reads PostgreSQL's own statistics for this database and schema.
func (s *Store) PostgresStats(ctx context.Context) (PostgresStats, error) {
	var p PostgresStats
	err := s.queryRows(ctx, sqlPostgresDatabase, nil, func(r rowScanner) error {
		return r.Scan(&p.Database, &p.SizeBytes, &p.Commits, &p.Rollbacks, &p.BlocksHit, &p.BlocksRead,
			&p.Deadlocks, &p.TempBytes, &p.Connections, &p.Active, &p.Idle, &p.IdleInTransaction, &p.WaitingOnLocks)
	})
	if err != nil {
		return p, wrap("postgres stats", err)
	}
	p.Tables, err = queryAll(ctx, s, sqlPostgresTables, nil, func(r rowScanner, t *TableStats) error {
		return r.Scan(&t.Name, &t.Rows, &t.TotalBytes, &t.TableBytes, &t.IndexBytes, &t.SeqScans, &t.IndexScans,
			&t.DeadRows, &t.LastVacuum)
	})
	return p, wrap("postgres table stats", err)
}

// wrap adds what failed to err, keeping nil nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
