package store

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

var (
	sqlAnalyticsWorkers = queryOf[workerPointRow]("analytics_workers")
	sqlAnalyticsQueues  = queryOf[queuePointRow]("analytics_queues")
	sqlAnalyticsParked  = queryOf[parkedPointRow]("analytics_parked")
	sqlAnalyticsDepth   = queryOf[depthPointRow]("analytics_queue_depth")
)

// Rows of the analytics statements, read by column name. Those with the fields of an mq type,
// in its order, convert to it: the compiler keeps the two in step.
type (
	workerPointRow struct {
		At           time.Time `db:"bucket"`
		Hostname     string    `db:"hostname"`
		WorkerID     string    `db:"worker_id"`
		PID          int       `db:"pid"`
		Minutes      int       `db:"minutes"`
		Requests     int64     `db:"requests"`
		PushRequests int64     `db:"push_requests"`
		PopRequests  int64     `db:"pop_requests"`
		PopEmpty     int64     `db:"pop_empty"`
		AckRequests  int64     `db:"ack_requests"`
		Transactions int64     `db:"transactions"`
		PushMessages int64     `db:"push_messages"`
		PopMessages  int64     `db:"pop_messages"`
		AckMessages  int64     `db:"ack_messages"`
		AckSuccess   int64     `db:"ack_success"`
		AckFailed    int64     `db:"ack_failed"`
		DBErrors     int64     `db:"db_errors"`
		DLQ          int64     `db:"dlq"`
		PushMsSum    float64   `db:"push_ms_sum"`
		PushMsMax    float64   `db:"push_ms_max"`
		PopMsSum     float64   `db:"pop_ms_sum"`
		PopMsMax     float64   `db:"pop_ms_max"`
		AckMsSum     float64   `db:"ack_ms_sum"`
		AckMsMax     float64   `db:"ack_ms_max"`
		TxnMsSum     float64   `db:"txn_ms_sum"`
		TxnMsMax     float64   `db:"txn_ms_max"`
		CPUUserUs    int64     `db:"cpu_user_us"`
		CPUSysUs     int64     `db:"cpu_sys_us"`
		RSSBytes     int64     `db:"rss_bytes"`
		PoolSize     int       `db:"pool_size"`
		PoolActive   int       `db:"pool_active"`
		PoolIdle     int       `db:"pool_idle"`
		Parked       int       `db:"parked"`
		PushHist     []int64   `db:"push_hist"`
		PopHist      []int64   `db:"pop_hist"`
		AckHist      []int64   `db:"ack_hist"`
		TxnHist      []int64   `db:"txn_hist"`
	}
	queuePointRow struct {
		At           time.Time `db:"bucket"`
		Queue        string    `db:"queue"`
		PushRequests int64     `db:"push_requests"`
		PushMessages int64     `db:"push_messages"`
		PopRequests  int64     `db:"pop_requests"`
		PopMessages  int64     `db:"pop_messages"`
		PopEmpty     int64     `db:"pop_empty"`
		AckRequests  int64     `db:"ack_requests"`
		AckMessages  int64     `db:"ack_messages"`
		AckSuccess   int64     `db:"ack_success"`
		AckFailed    int64     `db:"ack_failed"`
		Transactions int64     `db:"transactions"`
		DLQ          int64     `db:"dlq"`
		AvgLagMs     float64   `db:"avg_lag_ms"`
		MaxLagMs     float64   `db:"max_lag_ms"`
	}
	parkedPointRow struct {
		At       time.Time `db:"bucket"`
		Queue    string    `db:"queue"`
		WorkerID string    `db:"worker_id"`
		Parked   int       `db:"parked"`
	}
	depthPointRow struct {
		At                time.Time `db:"bucket"`
		Queue             string    `db:"queue"`
		MaxTimeLagSeconds int64     `db:"max_time_lag_seconds"`
		AvgPending        float64   `db:"avg_pending"`
		AvgInFlight       float64   `db:"avg_in_flight"`
	}
	// topQueuesRow is a row of the analytics_top_* statements: the chosen queues, first first,
	// and how many queues the ranking saw.
	topQueuesRow struct {
		Names []string `db:"names"`
		Total int      `db:"total"`
	}
)

// WorkerSeries reads per-instance figures in w, optionally for one host name or worker id.
func (s *Store) WorkerSeries(ctx context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	args := windowArgs(w, pgx.StrictNamedArgs{"hostname": nullIfEmpty(hostname), "worker_id": nullIfEmpty(workerID)})
	out, err := readAll(ctx, s, sqlAnalyticsWorkers, args, func(r workerPointRow) mq.WorkerPoint { return mq.WorkerPoint(r) })
	return out, wrap("worker series", err)
}

// QueueSeries reads per-queue figures in w, optionally for one queue; only, when not nil, keeps
// those queues (the busiest ones TopQueues chose).
func (s *Store) QueueSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.QueuePoint, error) {
	out, err := readAll(ctx, s, sqlAnalyticsQueues, windowArgs(w, queueArgs(queue, only)),
		func(r queuePointRow) mq.QueuePoint { return mq.QueuePoint(r) })
	return out, wrap("queue series", err)
}

// QueueSeriesOther sums per bucket the figures of every queue not in answered: the "other"
// series that keeps queue-ops' totals whole when it answers only the busiest queues.
func (s *Store) QueueSeriesOther(ctx context.Context, w mq.Window, answered []string) ([]mq.QueuePoint, error) {
	if answered == nil {
		answered = []string{}
	}
	out, err := readAll(ctx, s, sqlAnalyticsOther, windowArgs(w, pgx.StrictNamedArgs{"answered": answered}),
		func(r queuePointRow) mq.QueuePoint { return mq.QueuePoint(r) })
	return out, wrap("other queues series", err)
}

var (
	sqlAnalyticsOther = queryOf[queuePointRow]("analytics_queues_other") // queue is ""
	sqlTopTraffic     = queryOf[topQueuesRow]("analytics_top_traffic")
	sqlTopLag         = queryOf[topQueuesRow]("analytics_top_lag")
	sqlTopRemoved     = queryOf[topQueuesRow]("analytics_top_removed")
)

// TopQueues names at most limit queues of w ranked by rank, first first, and counts every
// queue the ranking saw, so callers can say how many they left out.
func (s *Store) TopQueues(ctx context.Context, w mq.Window, rank mq.QueueRank, limit int) (names []string, total int, err error) {
	var q batchQuery
	use := func(r topQueuesRow) { names, total = r.Names, r.Total }
	switch rank {
	case mq.RankLag:
		q = sqlTopLag.batch(windowArgs(w, pgx.StrictNamedArgs{"limit": limit}), use)
	case mq.RankRemoved:
		q = sqlTopRemoved.batch(pgx.StrictNamedArgs{"from": w.SeriesFrom(), "to": w.To, "limit": limit}, use)
	default:
		q = sqlTopTraffic.batch(windowArgs(w, pgx.StrictNamedArgs{"limit": limit, "parked_only": rank == mq.RankParked}), use)
	}
	err = s.queryBatch(ctx, q)
	return names, total, wrap("top queues", err)
}

// ParkedSeries reads parked pops per queue and instance in w, optionally for one queue; only,
// when not nil, keeps those queues.
func (s *Store) ParkedSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.ParkedPoint, error) {
	out, err := readAll(ctx, s, sqlAnalyticsParked, windowArgs(w, queueArgs(queue, only)),
		func(r parkedPointRow) mq.ParkedPoint { return mq.ParkedPoint(r) })
	return out, wrap("parked series", err)
}

// DepthSeries reads consumer lag and depth per queue in w, optionally for one queue; only, when
// not nil, keeps those queues.
func (s *Store) DepthSeries(ctx context.Context, w mq.Window, queue string, only []string) ([]mq.DepthPoint, error) {
	out, err := readAll(ctx, s, sqlAnalyticsDepth, windowArgs(w, queueArgs(queue, only)),
		func(r depthPointRow) mq.DepthPoint { return mq.DepthPoint(r) })
	return out, wrap("depth series", err)
}

var (
	sqlAnalyticsRetention = queryOf[retentionRunRow]("analytics_retention")
	sqlRetentionTotals    = queryOf[retentionTotalRow]("analytics_retention_totals")
)

type (
	retentionRunRow struct {
		RunID        string    `db:"run_id"`
		At           time.Time `db:"run_at"`
		Queue        string    `db:"queue"`
		Partition    string    `db:"partition"`
		Kind         string    `db:"kind"`
		Removed      int64     `db:"removed"`
		Unconsumed   int64     `db:"unconsumed"`
		DeadLettered int64     `db:"dead_lettered"`
	}
	retentionTotalRow struct {
		Kind         string `db:"kind"`
		Removed      int64  `db:"removed"`
		Unconsumed   int64  `db:"unconsumed"`
		DeadLettered int64  `db:"dead_lettered"`
	}
)

// RetentionHistory reads the retention history between from and to, newest first (at most
// limit entries), and its totals per kind; queue "" means every queue, only (when not nil)
// keeps the runs of those queues.
func (s *Store) RetentionHistory(ctx context.Context, from, to time.Time, queue string, limit int, only []string) ([]mq.RetentionRun, []mq.RetentionTotal, error) {
	runs, err := readAll(ctx, s, sqlAnalyticsRetention,
		pgx.StrictNamedArgs{"from": from, "to": to, "queue": nullIfEmpty(queue), "limit": limit, "only": only},
		func(r retentionRunRow) mq.RetentionRun { return mq.RetentionRun(r) })
	if err != nil {
		return nil, nil, wrap("retention history", err)
	}
	totals, err := readAll(ctx, s, sqlRetentionTotals, pgx.StrictNamedArgs{"from": from, "to": to, "queue": nullIfEmpty(queue)},
		func(r retentionTotalRow) mq.RetentionTotal { return mq.RetentionTotal(r) })
	return runs, totals, wrap("retention totals", err)
}

var (
	sqlPostgresDatabase = queryOf[postgresDatabaseRow]("postgres_database")
	sqlPostgresTables   = queryOf[tableStatsRow]("postgres_tables")
)

type (
	postgresDatabaseRow struct {
		Database          string `db:"database"`
		SizeBytes         int64  `db:"size_bytes"`
		Commits           int64  `db:"commits"`
		Rollbacks         int64  `db:"rollbacks"`
		BlocksHit         int64  `db:"blocks_hit"`
		BlocksRead        int64  `db:"blocks_read"`
		Deadlocks         int64  `db:"deadlocks"`
		TempBytes         int64  `db:"temp_bytes"`
		Connections       int64  `db:"connections"`
		Active            int64  `db:"active"`
		Idle              int64  `db:"idle"`
		IdleInTransaction int64  `db:"idle_in_transaction"`
		WaitingOnLocks    int64  `db:"waiting_on_locks"`
	}
	tableStatsRow struct {
		Name       string     `db:"name"`
		Rows       int64      `db:"rows"`
		TotalBytes int64      `db:"total_bytes"`
		TableBytes int64      `db:"table_bytes"`
		IndexBytes int64      `db:"index_bytes"`
		SeqScans   int64      `db:"seq_scans"`
		IndexScans int64      `db:"index_scans"`
		DeadRows   int64      `db:"dead_rows"`
		LastVacuum *time.Time `db:"last_vacuum"`
	}
)

// PostgresStats reads PostgreSQL's own statistics for this database and schema.
func (s *Store) PostgresStats(ctx context.Context) (mq.PostgresStats, error) {
	var p mq.PostgresStats
	err := s.queryBatch(ctx, sqlPostgresDatabase.batch(nil, func(r postgresDatabaseRow) {
		p.Database, p.SizeBytes, p.Commits, p.Rollbacks = r.Database, r.SizeBytes, r.Commits, r.Rollbacks
		p.BlocksHit, p.BlocksRead, p.Deadlocks, p.TempBytes = r.BlocksHit, r.BlocksRead, r.Deadlocks, r.TempBytes
		p.Connections, p.Active, p.Idle = r.Connections, r.Active, r.Idle
		p.IdleInTransaction, p.WaitingOnLocks = r.IdleInTransaction, r.WaitingOnLocks
	}))
	if err != nil {
		return p, wrap("postgres stats", err)
	}
	p.Tables, err = readAll(ctx, s, sqlPostgresTables, nil, func(r tableStatsRow) mq.TableStats { return mq.TableStats(r) })
	if err != nil {
		return p, wrap("postgres table stats", err)
	}
	p.Horizon, err = s.XminHorizon(ctx)
	return p, err
}

var (
	sqlXminOldest      = queryOf[xminHolderRow]("xmin_oldest_transaction")
	sqlXminReplication = queryOf[replicationHorizonRow]("xmin_replication")
)

type (
	xminHolderRow struct {
		PID             int        `db:"pid"`
		ApplicationName string     `db:"application_name"`
		State           string     `db:"state"`
		BackendType     string     `db:"backend_type"`
		XactStart       *time.Time `db:"xact_start"` // NULL: another role's session (mq.XminHolder.Hidden)
		AgeSeconds      float64    `db:"age_seconds"`
		XidAge          int64      `db:"xid_age"`
	}
	replicationHorizonRow struct {
		Name           string `db:"name"`
		Type           string `db:"type"`
		Active         bool   `db:"active"`
		XminAge        *int64 `db:"xmin_age"`
		CatalogXminAge *int64 `db:"catalog_xmin_age"`
	}
)

// XminHorizon reads the oldest snapshot horizon held on the database: the session holding the
// oldest snapshot, and the replication slots and walsenders holding one (one round trip).
// It reads PostgreSQL's views only, so it costs the same whatever the queues hold.
func (s *Store) XminHorizon(ctx context.Context) (mq.XminHorizon, error) {
	var h mq.XminHorizon
	err := s.queryBatch(ctx,
		sqlXminOldest.batch(nil, func(r xminHolderRow) {
			o := mq.XminHolder{PID: r.PID, ApplicationName: r.ApplicationName, State: r.State, BackendType: r.BackendType,
				AgeSeconds: r.AgeSeconds, XidAge: r.XidAge}
			if r.XactStart != nil {
				o.XactStart = *r.XactStart
			} else {
				o.Hidden = true
			}
			h.Holder = &o
		}),
		sqlXminReplication.batch(nil, func(r replicationHorizonRow) {
			h.Replication = append(h.Replication, mq.ReplicationHorizon(r))
		}),
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

// windowArgs are the parameters of the analytics statements: the window (@from, @to,
// @bucket_minutes), then those of more.
func windowArgs(w mq.Window, more pgx.StrictNamedArgs) pgx.StrictNamedArgs {
	out := pgx.StrictNamedArgs{"from": w.SeriesFrom(), "to": w.To, "bucket_minutes": w.BucketMinutes}
	maps.Copy(out, more)
	return out
}

// queueArgs are the filters of the per-queue series: @queue (NULL when empty) and @only, the
// queues to answer (NULL: all).
func queueArgs(queue string, only []string) pgx.StrictNamedArgs {
	return pgx.StrictNamedArgs{"queue": nullIfEmpty(queue), "only": only}
}
