package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

var (
	sqlAnalyticsWorkers = query("analytics_workers")
	sqlAnalyticsQueues  = query("analytics_queues")
	sqlAnalyticsParked  = query("analytics_parked")
	sqlAnalyticsDepth   = query("analytics_queue_depth")
)

// WorkerSeries reads per-instance figures in w, optionally for one host name or worker id.
func (s *Store) WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsWorkers, windowArgs(w, hostname, workerID), func(r rowScanner, p *mq.WorkerPoint) error {
		return r.Scan(&p.At, &p.Hostname, &p.WorkerID, &p.PID, &p.Minutes, &p.Requests, &p.PushRequests,
			&p.PopRequests, &p.PopEmpty, &p.AckRequests, &p.Transactions, &p.PushMessages, &p.PopMessages,
			&p.AckMessages, &p.AckSuccess, &p.AckFailed, &p.DBErrors, &p.DLQ, &p.PushMsSum, &p.PushMsMax,
			&p.PopMsSum, &p.PopMsMax, &p.AckMsSum, &p.AckMsMax, &p.TxnMsSum, &p.TxnMsMax, &p.CPUUserUs,
			&p.CPUSysUs, &p.RSSBytes, &p.PoolSize, &p.PoolActive, &p.PoolIdle, &p.Parked,
			&p.PushHist, &p.PopHist, &p.AckHist, &p.TxnHist)
	})
	return out, wrap("worker series", err)
}

// QueueSeries reads per-queue figures in w, optionally for one queue; only, when not nil, keeps
// those queues (the busiest ones TopQueues chose).
func (s *Store) QueueSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.QueuePoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsQueues, append(windowArgs(w, queue), only), func(r rowScanner, p *mq.QueuePoint) error {
		return r.Scan(&p.At, &p.Queue, &p.PushRequests, &p.PushMessages, &p.PopRequests, &p.PopMessages,
			&p.PopEmpty, &p.AckRequests, &p.AckMessages, &p.AckSuccess, &p.AckFailed, &p.Transactions, &p.DLQ,
			&p.AvgLagMs, &p.MaxLagMs)
	})
	return out, wrap("queue series", err)
}

// QueueSeriesOther sums per bucket the figures of every queue not in answered: the "other"
// series that keeps queue-ops' totals whole when it answers only the busiest queues.
func (s *Store) QueueSeriesOther(ctx context.Context, w mq.Window, answered []string) ([]mq.QueuePoint, error) {
	if answered == nil {
		answered = []string{}
	}
	out, err := queryAll(ctx, s, sqlAnalyticsOther, []any{w.SeriesFrom(), w.To, w.BucketMinutes, answered},
		func(r rowScanner, p *mq.QueuePoint) error {
			return r.Scan(&p.At, &p.PushRequests, &p.PushMessages, &p.PopRequests, &p.PopMessages,
				&p.PopEmpty, &p.AckRequests, &p.AckMessages, &p.AckSuccess, &p.AckFailed, &p.Transactions, &p.DLQ,
				&p.AvgLagMs, &p.MaxLagMs)
		})
	return out, wrap("other queues series", err)
}

var (
	sqlAnalyticsOther = query("analytics_queues_other")
	sqlTopTraffic     = query("analytics_top_traffic")
	sqlTopLag         = query("analytics_top_lag")
	sqlTopRemoved     = query("analytics_top_removed")
)

// TopQueues names at most limit queues of w ranked by rank, first first, and counts every
// queue the ranking saw, so callers can say how many they left out.
func (s *Store) TopQueues(ctx context.Context, w mq.Window, rank mq.QueueRank, limit int) (names []string, total int, err error) {
	var args []any
	var sql string
	switch rank {
	case mq.RankLag:
		sql, args = sqlTopLag, []any{w.SeriesFrom(), w.To, w.BucketMinutes, limit}
	case mq.RankRemoved:
		sql, args = sqlTopRemoved, []any{w.SeriesFrom(), w.To, limit}
	default:
		sql, args = sqlTopTraffic, []any{w.SeriesFrom(), w.To, w.BucketMinutes, limit, rank == mq.RankParked}
	}
	_, err = s.queryOne(ctx, sql, args, &names, &total)
	return names, total, wrap("top queues", err)
}

// ParkedSeries reads parked pops per queue and instance in w, optionally for one queue; only,
// when not nil, keeps those queues.
func (s *Store) ParkedSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.ParkedPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsParked, append(windowArgs(w, queue), only), func(r rowScanner, p *mq.ParkedPoint) error {
		return r.Scan(&p.At, &p.Queue, &p.WorkerID, &p.Parked)
	})
	return out, wrap("parked series", err)
}

// DepthSeries reads consumer lag and depth per queue in w, optionally for one queue; only, when
// not nil, keeps those queues.
func (s *Store) DepthSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.DepthPoint, error) {
	out, err := queryAll(ctx, s, sqlAnalyticsDepth, append(windowArgs(w, queue), only), func(r rowScanner, p *mq.DepthPoint) error {
		return r.Scan(&p.At, &p.Queue, &p.MaxTimeLagSeconds, &p.AvgPending, &p.AvgInFlight)
	})
	return out, wrap("depth series", err)
}

var (
	sqlAnalyticsRetention = query("analytics_retention")
	sqlRetentionTotals    = query("analytics_retention_totals")
)

// RetentionHistory reads the retention history between from and to, newest first (at most
// limit entries), and its totals per kind; queue "" means every queue, only (when not nil)
// keeps the runs of those queues.
func (s *Store) RetentionHistory(ctx context.Context, from, to time.Time, queue string, limit int, only []string) ([]mq.RetentionRun, []mq.RetentionTotal, error) {
	runs, err := queryAll(ctx, s, sqlAnalyticsRetention, []any{from, to, nullIfEmpty(queue), limit, only},
		func(r rowScanner, h *mq.RetentionRun) error {
			return r.Scan(&h.RunID, &h.At, &h.Queue, &h.Partition, &h.Kind, &h.Removed, &h.Unconsumed, &h.DeadLettered)
		})
	if err != nil {
		return nil, nil, wrap("retention history", err)
	}
	totals, err := queryAll(ctx, s, sqlRetentionTotals, []any{from, to, nullIfEmpty(queue)},
		func(r rowScanner, t *mq.RetentionTotal) error {
			return r.Scan(&t.Kind, &t.Removed, &t.Unconsumed, &t.DeadLettered)
		})
	return runs, totals, wrap("retention totals", err)
}

var (
	sqlPostgresDatabase = query("postgres_database")
	sqlPostgresTables   = query("postgres_tables")
)

// PostgresStats reads PostgreSQL's own statistics for this database and schema.
func (s *Store) PostgresStats(ctx context.Context) (mq.PostgresStats, error) {
	var p mq.PostgresStats
	_, err := s.queryOne(ctx, sqlPostgresDatabase, nil, &p.Database, &p.SizeBytes, &p.Commits, &p.Rollbacks,
		&p.BlocksHit, &p.BlocksRead, &p.Deadlocks, &p.TempBytes, &p.Connections, &p.Active, &p.Idle,
		&p.IdleInTransaction, &p.WaitingOnLocks)
	if err != nil {
		return p, wrap("postgres stats", err)
	}
	p.Tables, err = queryAll(ctx, s, sqlPostgresTables, nil, func(r rowScanner, t *mq.TableStats) error {
		return r.Scan(&t.Name, &t.Rows, &t.TotalBytes, &t.TableBytes, &t.IndexBytes, &t.SeqScans, &t.IndexScans,
			&t.DeadRows, &t.LastVacuum)
	})
	if err != nil {
		return p, wrap("postgres table stats", err)
	}
	p.Horizon, err = s.XminHorizon(ctx)
	return p, err
}

var (
	sqlXminOldest      = query("xmin_oldest_transaction")
	sqlXminReplication = query("xmin_replication")
)

// XminHorizon reads the oldest snapshot horizon held on the database: the session holding the
// oldest snapshot, and the replication slots and walsenders holding one (one round trip).
// It reads PostgreSQL's views only, so it costs the same whatever the queues hold.
func (s *Store) XminHorizon(ctx context.Context) (mq.XminHorizon, error) {
	var h mq.XminHorizon
	err := s.queryBatch(ctx,
		batchQuery{sqlXminOldest, nil, func(r rowScanner) error {
			var o mq.XminHolder
			var start *time.Time
			err := r.Scan(&o.PID, &o.ApplicationName, &o.State, &o.BackendType, &start, &o.AgeSeconds, &o.XidAge)
			if start != nil {
				o.XactStart = *start
			} else {
				o.Hidden = true
			}
			h.Holder = &o
			return err
		}},
		batchQuery{sqlXminReplication, nil, func(r rowScanner) error {
			var x mq.ReplicationHorizon
			err := r.Scan(&x.Name, &x.Type, &x.Active, &x.XminAge, &x.CatalogXminAge)
			h.Replication = append(h.Replication, x)
			return err
		}},
	)
	return h, wrap("xmin horizon", err)
}

// wrap adds what failed to err, keeping nil nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// windowArgs are the leading parameters of the analytics statements: the window, then each
// filter (NULL when empty).
func windowArgs(w mq.Window, filters ...string) []any {
	out := []any{w.SeriesFrom(), w.To, w.BucketMinutes}
	for _, f := range filters {
		out = append(out, nullIfEmpty(f))
	}
	return out
}
