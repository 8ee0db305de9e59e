package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/mq"
)

// Leader is a pooled connection that holds one background job's advisory lock
// (docs/api/operations.md §5). The job's statements run on it, so the lock lasts exactly as long as
// the work, and frees itself when the instance dies and its connection drops. Batches commit
// one by one: each method is one bounded transaction.
type Leader struct {
	s *Store
	c *pgxpool.Conn
}

// A job's statements are never cut short: a statement cancelled in flight breaks the session,
// and its advisory lock is then freed only once PostgreSQL notices, after Stop has returned.
// A stopped job instead starts no further statement, so it ends between batches and gives
// its lock back itself. Statements stay bounded by the batch sizes and statement_timeout.

// queryRow runs one statement of the job unless ctx has ended.
func (l *Leader) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	return l.c.QueryRow(context.WithoutCancel(ctx), sql, args...)
}

// query is queryRow for statements returning several rows.
func (l *Leader) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.c.Query(context.WithoutCancel(ctx), sql, args...)
}

// errRow is a row whose Scan reports err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

var (
	sqlTryLock           = query("job_try_lock")
	sqlUnlock            = query("job_unlock")
	sqlRetentionBatch    = query("retention_batch")
	sqlEvictionBatch     = query("eviction_batch")
	sqlLeaseHousekeeping = query("lease_housekeeping")
	sqlCleanupTombstones = query("cleanup_tombstones")
	sqlCleanupPartitions = query("cleanup_partitions")
	sqlCleanupHistory    = query("cleanup_history")
	sqlStatsPartitions   = query("stats_partitions")
	sqlStatsRollup       = query("stats_rollup")
)

// TryLead runs fn while holding job's advisory lock on a connection of its own. It reports
// false, without calling fn, when another session — another instance — holds the lock. The
// lock is keyed by job and schema, so brokers on different schemas lead independently.
func (s *Store) TryLead(ctx context.Context, job string, fn func(*Leader) error) (led bool, err error) {
	err = s.withConn(ctx, func(c *pgxpool.Conn) error {
		l := &Leader{s: s, c: c}
		if err := l.queryRow(ctx, sqlTryLock, job).Scan(&led); err != nil || !led {
			return err
		}
		defer release(ctx, c, job)
		return fn(l)
	})
	if err != nil {
		return led, fmt.Errorf("job %s: %w", job, err)
	}
	return led, nil
}

// release gives the lock back. When that fails (the job's context ended mid-statement, the
// connection broke) the connection is closed instead, so it never returns to the pool still
// holding the lock; closing ends the session, and PostgreSQL frees the lock with it.
func release(ctx context.Context, c *pgxpool.Conn, job string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var freed bool
	if err := c.QueryRow(uctx, sqlUnlock, job).Scan(&freed); err != nil || !freed {
		_ = c.Conn().Close(uctx) // nothing more to do: a closed session holds no lock
	}
}

// RemovalCount is what one retention or eviction batch removed from one partition under one
// rule (kind retention, completed_retention or max_wait_time_eviction).
type RemovalCount struct {
	Queue, Partition, Kind string
	Removed                int64
	Unconsumed             int64 // kind retention: removed messages no consumer had consumed
	DeadLettered           int64 // eviction: DLQ entries written
}

// RetentionBatch removes at most limit messages that retention makes due (docs/api/concepts.md §11)
// and records them under run in the retention history.
func (l *Leader) RetentionBatch(ctx context.Context, run string, limit int) ([]RemovalCount, error) {
	return l.removals(ctx, sqlRetentionBatch, run, limit)
}

// EvictionBatch dead-letters and removes at most limit messages older than their queue's
// maxWaitTimeSeconds (docs/api/concepts.md §11), recording them under run.
func (l *Leader) EvictionBatch(ctx context.Context, run string, limit int) ([]RemovalCount, error) {
	return l.removals(ctx, sqlEvictionBatch, run, limit)
}

func (l *Leader) removals(ctx context.Context, sql, run string, limit int) ([]RemovalCount, error) {
	rows, err := l.query(ctx, sql, run, limit, l.s.nowArg())
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []RemovalCount
	for rows.Next() {
		var r RemovalCount
		if err := rows.Scan(&r.Queue, &r.Partition, &r.Kind, &r.Removed, &r.Unconsumed, &r.DeadLettered); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, classify(rows.Err())
}

// Housekeeping is what one lease housekeeping run found.
type Housekeeping struct {
	ExpiredLeases   int64 // leases that expired since the previous run
	RetriesEnded    int64 // retry delays that ended since the previous run
	QueuesSignalled int   // queues whose parked pops were woken
}

// LeaseHousekeeping signals every queue where a lease expired or a retry delay ended since
// the previous run of any instance (the first run ever looks firstWindow back).
func (l *Leader) LeaseHousekeeping(ctx context.Context, workerID string, firstWindow time.Duration) (Housekeeping, error) {
	var h Housekeeping
	err := l.queryRow(ctx, sqlLeaseHousekeeping, workerID, firstWindow, l.s.nowArg()).
		Scan(&h.ExpiredLeases, &h.RetriesEnded, &h.QueuesSignalled)
	return h, classify(err)
}

// CleanupTombstones removes at most limit dedup keys whose window has ended.
func (l *Leader) CleanupTombstones(ctx context.Context, limit int) (int64, error) {
	var n int64
	err := l.queryRow(ctx, sqlCleanupTombstones, limit, l.s.nowArg()).Scan(&n)
	return n, classify(err)
}

// CleanupPartitions removes at most limit empty partitions idle for days days.
func (l *Leader) CleanupPartitions(ctx context.Context, days, limit int) (int64, error) {
	var n int64
	err := l.queryRow(ctx, sqlCleanupPartitions, days, limit, l.s.nowArg()).Scan(&n)
	return n, classify(err)
}

// CleanupHistory removes at most limit rows per history table: stats history older than
// statsDays, retention history and metrics older than metricsDays. more reports that some
// table had more.
func (l *Leader) CleanupHistory(ctx context.Context, statsDays, metricsDays, limit int) (removed int64, more bool, err error) {
	args := cleanupHistoryArgs{StatsDays: statsDays, MetricsDays: metricsDays, Limit: limit, Now: l.s.nowArg()}
	err = l.queryRow(ctx, sqlCleanupHistory, args.args()...).Scan(&removed, &more)
	return removed, more, classify(err)
}

// cleanupHistoryArgs are the parameters of qg_cleanup_history (see sqlCall).
type cleanupHistoryArgs struct {
	StatsDays, MetricsDays, Limit int
	Now                           any
}

func (a cleanupHistoryArgs) args() []any { return []any{a.StatsDays, a.MetricsDays, a.Limit, a.Now} }

// StatsPartitions recomputes the counters of at most limit partitions after after ("" = from
// the first, in id order) under run. It returns the last partition done, "" when none was left.
func (l *Leader) StatsPartitions(ctx context.Context, run, after string, limit int) (string, error) {
	var last *string
	args := statsPartitionsArgs{Run: run, After: nullIfEmpty(after), Limit: limit, Now: l.s.nowArg()}
	err := l.queryRow(ctx, sqlStatsPartitions, args.args()...).Scan(&last)
	if err != nil || last == nil {
		return "", classify(err)
	}
	return *last, nil
}

// statsPartitionsArgs are the parameters of qg_stats_partitions (see sqlCall).
type statsPartitionsArgs struct {
	Run   string
	After any // nil: from the first partition
	Limit int
	Now   any
}

func (a statsPartitionsArgs) args() []any { return []any{a.Run, a.After, a.Limit, a.Now} }

// StatsRollup finishes run: removes what it did not see, recomputes the queue, namespace,
// task and system rows and writes the history.
func (l *Leader) StatsRollup(ctx context.Context, run string) (mq.StatsRefresh, error) {
	var r mq.StatsRefresh
	err := l.queryRow(ctx, sqlStatsRollup, run, l.s.nowArg()).
		Scan(&r.Partition, &r.Queue, &r.Namespace, &r.Task, &r.System, &r.Cleanup)
	return r, classify(err)
}
