package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
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

// A job's statements are not cut short by Stop: a statement cancelled in flight breaks the
// session, and its advisory lock is then freed only once PostgreSQL notices, after Stop has
// returned. A stopped job instead starts no further statement, so it ends between batches and
// gives its lock back itself. Each statement still has a deadline of DB_STATEMENT_TIMEOUT on
// the broker's clock (docs/api/operations.md §9.1): a frozen server enforces no
// statement_timeout, and a job stuck on it would keep its lock and its connection forever.
// Past that deadline the connection is closed, which ends the session and frees the lock.

// stmtContext is the context of one statement of the job: not cancelled by ctx, ending at
// DB_STATEMENT_TIMEOUT, or sooner at the work deadline of a bulk route that runs the job
// (stats refresh).
func (l *Leader) stmtContext(ctx context.Context) (context.Context, context.CancelFunc) {
	until := time.Now().Add(l.s.bulkTimeout)
	if budget.IsBulk(ctx) {
		wctx, cancel := l.s.limits().Work(ctx)
		if d, ok := wctx.Deadline(); ok {
			until = minTime(until, d)
		}
		cancel()
	}
	return context.WithDeadline(context.WithoutCancel(ctx), until)
}

// queryRow runs one statement of the job unless ctx has ended, scanning its one row into dest.
func (l *Leader) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, cancel := l.stmtContext(ctx)
	defer cancel()
	err := l.c.QueryRow(sctx, sql, args...).Scan(dest...)
	return classify(deadlineError(context.WithoutCancel(ctx), sctx, err))
}

// queryEach is queryRow for statements returning several rows: fn gets each.
func (l *Leader) queryEach(ctx context.Context, sql string, args []any, fn func(rowScanner) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, cancel := l.stmtContext(ctx)
	defer cancel()
	rows, err := l.c.Query(sctx, sql, args...)
	err = eachRow(rows, err, fn)
	return classify(deadlineError(context.WithoutCancel(ctx), sctx, err))
}

var (
	sqlTryLock           = query("job_try_lock")
	sqlUnlock            = query("job_unlock")
	sqlJobClaim          = query("job_claim")
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
	c, err := s.acquire(ctx)
	if err == nil {
		err = func() error {
			defer c.Release()
			l := &Leader{s: s, c: c}
			if err := l.queryRow(ctx, sqlTryLock, []any{job}, &led); err != nil || !led {
				if err != nil {
					closeConn(c) // it may be mid-statement on a server that stopped answering
				}
				return err
			}
			defer release(ctx, c, job)
			return fn(l)
		}()
	}
	if err = s.outcome(ctx, err); err != nil {
		return led, fmt.Errorf("job %s: %w", job, err)
	}
	return led, nil
}

// release gives the lock back. When that fails (the job's context ended mid-statement, the
// connection broke) the connection is closed instead, so it never returns to the pool still
// holding the lock; closing ends the session, and PostgreSQL frees the lock with it.
func release(ctx context.Context, c *pgxpool.Conn, job string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(5*time.Second, c.Conn().Config().ConnectTimeout))
	defer cancel()
	var freed bool
	if err := c.QueryRow(uctx, sqlUnlock, job).Scan(&freed); err != nil || !freed {
		_ = c.Conn().Close(uctx) // nothing more to do: a closed session holds no lock
	}
}

// Claim records that workerID starts a run of job, in the job's schedule shared by every
// instance, and reports true; with gap > 0 only when no run of job started within gap before
// now on any instance (false then, nothing recorded). gap 0 always claims: a run a route asked
// for. Call it while leading job.
func (l *Leader) Claim(ctx context.Context, job string, gap time.Duration, workerID string) (bool, error) {
	var g *time.Duration
	if gap > 0 {
		g = &gap
	}
	var ok bool
	err := l.queryRow(ctx, sqlJobClaim, []any{job, g, workerID}, &ok)
	return ok, err
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
	var out []RemovalCount
	err := l.queryEach(ctx, sql, []any{run, limit, l.s.nowArg()}, func(rows rowScanner) error {
		var r RemovalCount
		if err := rows.Scan(&r.Queue, &r.Partition, &r.Kind, &r.Removed, &r.Unconsumed, &r.DeadLettered); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
	err := l.queryRow(ctx, sqlLeaseHousekeeping, []any{workerID, firstWindow, l.s.nowArg()}, &h.ExpiredLeases, &h.RetriesEnded, &h.QueuesSignalled)
	return h, err
}

// CleanupTombstones removes at most limit dedup keys whose window has ended.
func (l *Leader) CleanupTombstones(ctx context.Context, limit int) (int64, error) {
	var n int64
	err := l.queryRow(ctx, sqlCleanupTombstones, []any{limit, l.s.nowArg()}, &n)
	return n, err
}

// CleanupPartitions removes at most limit empty partitions idle for days days.
func (l *Leader) CleanupPartitions(ctx context.Context, days, limit int) (int64, error) {
	var n int64
	err := l.queryRow(ctx, sqlCleanupPartitions, []any{days, limit, l.s.nowArg()}, &n)
	return n, err
}

// CleanupHistory removes at most limit rows per history table: stats history older than
// statsDays, retention history and metrics older than metricsDays. more reports that some
// table had more.
func (l *Leader) CleanupHistory(ctx context.Context, statsDays, metricsDays, limit int) (removed int64, more bool, err error) {
	args := cleanupHistoryArgs{StatsDays: statsDays, MetricsDays: metricsDays, Limit: limit, Now: l.s.nowArg()}
	err = l.queryRow(ctx, sqlCleanupHistory, args.args(), &removed, &more)
	return removed, more, err
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
	err := l.queryRow(ctx, sqlStatsPartitions, args.args(), &last)
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
	err := l.queryRow(ctx, sqlStatsRollup, []any{run, l.s.nowArg()}, &r.Partition, &r.Queue, &r.Namespace, &r.Task, &r.System, &r.Cleanup)
	return r, err
}
