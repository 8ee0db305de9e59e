package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// Leader is a pooled connection that holds one background job's advisory lock
// (docs/api/operations.md §5). The job's statements run on it, so the lock lasts exactly as long as
// the work, and frees itself when the instance dies and its connection drops. Batches commit
// one by one: each method is one bounded transaction.
type Leader struct {
	s *Store
	c *pgxpool.Conn
	// job and holder name the lease row the job leads by behind a pooler without direct
	// sessions (leadByLease); holder is empty when it holds the advisory lock instead.
	job, holder string
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

// jobRow runs one statement of the job unless ctx has ended and reads its first row by name
// (pgx.ErrNoRows when there is none).
func jobRow[T any](ctx context.Context, l *Leader, q readQuery[T], args pgx.StrictNamedArgs) (T, error) {
	return jobQuery(ctx, l, q.sql, args, q.one)
}

// jobRows is jobRow for statements returning several rows: it reads them all.
func jobRows[T any](ctx context.Context, l *Leader, q readQuery[T], args pgx.StrictNamedArgs) ([]T, error) {
	return jobQuery(ctx, l, q.sql, args, q.all)
}

// jobQuery runs sql on the job's connection within its statement deadline (stmtContext) and
// reads the result with read. A job leading by a lease row (behind a pooler) runs it in a
// transaction of its own that renews the lease first.
func jobQuery[R any](ctx context.Context, l *Leader, sql string, args pgx.StrictNamedArgs, read func(pgx.Rows, error) (R, error)) (R, error) {
	var v R
	if err := ctx.Err(); err != nil {
		return v, err
	}
	sctx, cancel := l.stmtContext(ctx)
	defer cancel()
	var err error
	if l.s.begin != "" && l.s.session == nil {
		// Behind a pooler without sessions the statement needs the unit's settings; a job
		// leading by lease (l.holder set) renews the lease in the same transaction.
		err = inUnit(sctx, l.s.begin, l.c.Conn(), func(ctx context.Context) error {
			if l.holder != "" {
				r, err := sqlLeaseRenew.one(l.c.Query(ctx, sqlLeaseRenew.sql, l.leaseArgs()))
				if err != nil {
					return err
				}
				if !r.Locked {
					return errLostLease
				}
			}
			var err error
			v, err = read(l.c.Query(ctx, sql, named(args)...))
			return err
		})
	} else {
		v, err = read(l.c.Query(sctx, sql, named(args)...))
	}
	return v, classify(deadlineError(context.WithoutCancel(ctx), sctx, err))
}

var (
	sqlTryLock           = queryOf[tryLockRow]("job_try_lock")
	sqlUnlock            = queryOf[unlockRow]("job_unlock")
	sqlLeaseTake         = queryOf[tryLockRow]("job_lease_take")
	sqlLeaseRenew        = queryOf[tryLockRow]("job_lease_renew")
	sqlLeaseRelease      = queryOf[unlockRow]("job_lease_release")
	sqlJobClaim          = queryOf[jobClaimRow]("job_claim")
	sqlRetentionBatch    = queryOf[removalRow]("retention_batch")
	sqlEvictionBatch     = queryOf[removalRow]("eviction_batch")
	sqlSegmentRotate     = queryOf[segmentRow]("segment_rotate")
	sqlSegmentsDue       = queryOf[segmentRow]("segments_due")
	sqlSegmentDrop       = queryOf[removalRow]("segment_drop")
	sqlTombstoneSegsDue  = queryOf[segmentRow]("tombstone_segments_due")
	sqlTombstoneSegDrop  = queryOf[droppedRow]("tombstone_segment_drop")
	sqlLeaseHousekeeping = queryOf[Housekeeping]("lease_housekeeping")
	sqlCleanupTombstones = queryOf[removedRow]("cleanup_tombstones")
	sqlCleanupPartitions = queryOf[removedRow]("cleanup_partitions")
	sqlCleanupHistory    = queryOf[cleanupHistoryRow]("cleanup_history")
	sqlStatsPartitions   = queryOf[statsPartitionsRow]("stats_partitions")
	sqlStatsRollup       = queryOf[statsRollupRow]("stats_rollup")
)

// Rows of the job statements, read by column name (RemovalCount and Housekeeping are rows too).
type (
	tryLockRow struct {
		Locked bool `db:"locked"`
	}
	unlockRow struct {
		Freed bool `db:"freed"`
	}
	jobClaimRow struct {
		Claimed bool `db:"claimed"`
	}
	segmentRow struct {
		Seg int `db:"seg"`
	}
	droppedRow struct {
		Dropped bool `db:"dropped"`
	}
	removedRow struct {
		Removed int64 `db:"removed"`
	}
	cleanupHistoryRow struct {
		Removed int64 `db:"removed"`
		More    bool  `db:"more"`
	}
	statsPartitionsRow struct {
		Last *string `db:"last"` // NULL: no partition was left
	}
	statsRollupRow struct {
		Partition int64 `db:"partitions"`
		Queue     int64 `db:"queues"`
		Namespace int64 `db:"namespaces"`
		Task      int64 `db:"tasks"`
		System    int64 `db:"systems"`
		Cleanup   int64 `db:"cleanup"`
	}
)

// TryLead runs fn while holding job's advisory lock on a connection of its own. It reports
// false, without calling fn, when another session — another instance — holds the lock. The
// lock is keyed by job and schema, so brokers on different schemas lead independently. Behind a
// transaction pooler the connection is a direct session of DATABASE_SESSION_URL, or, without
// one, the job leads by its lease row (leadByLease).
func (s *Store) TryLead(ctx context.Context, job string, fn func(*Leader) error) (led bool, err error) {
	if s.begin != "" && s.session == nil {
		return s.leadByLease(ctx, job, fn)
	}
	c, err := s.acquireLeader(ctx)
	if err == nil {
		err = func() error {
			defer c.Release()
			l := &Leader{s: s, c: c}
			r, err := jobRow(ctx, l, sqlTryLock, pgx.StrictNamedArgs{"job": job})
			if led = r.Locked; err != nil || !led {
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

// acquireLeader takes the connection a job's advisory lock lives on: a pooled one, or behind a
// pooler a direct session, within DB_CONNECTION_TIMEOUT (a job that finds none waits for its
// next tick).
func (s *Store) acquireLeader(ctx context.Context) (*pgxpool.Conn, error) {
	if s.session == nil {
		// A pooled session may hold a request's tenant scope; a job sees every tenant.
		c, err := s.acquire(ctx)
		if err == nil {
			sctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			if err = applyScope(tenant.WithAll(sctx), c); err != nil {
				closeConn(c)
				c.Release()
				return nil, err
			}
		}
		return c, err
	}
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.session.Acquire(actx)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: DATABASE_SESSION_URL: %w", mq.ErrUnavailable, err)
	}
	return c, err
}

// leaseTTL is how long a job's lease row lasts without a renewal: every statement renews it,
// and one statement may take DB_STATEMENT_TIMEOUT, so twice that (at least a minute). An
// instance that dies holding it leaves the job to the others after that long.
func (s *Store) leaseTTL() time.Duration { return max(2*s.bulkTimeout, time.Minute) }

// errLostLease stops a job whose lease row another instance took after it expired.
var errLostLease = errors.New("the job's lease passed to another instance")

// leadByLease is TryLead behind a pooler without direct sessions: the job's lease row (migration
// 0018) takes the advisory lock's place. Each of the job's statements runs in a transaction of
// its own that renews the row first (jobQuery), so a job that lost its lease stops at its next
// statement, and a statement in flight keeps the row locked against a takeover until it commits.
func (s *Store) leadByLease(ctx context.Context, job string, fn func(*Leader) error) (led bool, err error) {
	c, err := s.acquire(ctx)
	if err == nil {
		err = func() error {
			defer c.Release()
			l := &Leader{s: s, c: c, job: job, holder: uuid.NewString()}
			// Taken as a plain statement: there is no lease to renew yet.
			r, err := jobQuery(ctx, &Leader{s: s, c: c}, sqlLeaseTake.sql, l.leaseArgs(), sqlLeaseTake.one)
			if led = r.Locked; err != nil || !led {
				if err != nil {
					closeConn(c)
				}
				return err
			}
			defer l.giveBack(ctx)
			return fn(l)
		}()
	}
	if err = s.outcome(ctx, err); err != nil {
		return led, fmt.Errorf("job %s: %w", job, err)
	}
	return led, nil
}

// leaseArgs are the arguments of the lease statements.
func (l *Leader) leaseArgs() pgx.StrictNamedArgs {
	return pgx.StrictNamedArgs{"job": l.job, "holder": l.holder, "ttl": l.s.leaseTTL()}
}

// giveBack releases the lease row; when that fails the row expires by itself after leaseTTL.
func (l *Leader) giveBack(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.s.timeout)
	defer cancel()
	args := l.leaseArgs()
	delete(args, "ttl")
	if !l.c.Conn().IsClosed() {
		if _, err := jobQuery(ctx, &Leader{s: l.s, c: l.c}, sqlLeaseRelease.sql, args, sqlLeaseRelease.one); err == nil {
			return
		}
		closeConn(l.c)
	}
	// The job's connection broke (its statement passed a deadline): the row is given back on
	// another, or the other instances would skip the job until it expired.
	_ = l.s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := sqlLeaseRelease.one(c.Query(ctx, sqlLeaseRelease.sql, args))
		return err
	})
}

// release gives the lock back. When that fails (the job's context ended mid-statement, the
// connection broke) the connection is closed instead, so it never returns to the pool still
// holding the lock; closing ends the session, and PostgreSQL frees the lock with it.
func release(ctx context.Context, c *pgxpool.Conn, job string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(5*time.Second, c.Conn().Config().ConnectTimeout))
	defer cancel()
	r, err := sqlUnlock.one(c.Query(uctx, sqlUnlock.sql, pgx.StrictNamedArgs{"job": job}))
	if err != nil || !r.Freed {
		_ = c.Conn().Close(uctx) // nothing more to do: a closed session holds no lock
	}
}

// Claim records that workerID starts a run of job, in the job's schedule shared by every
// instance, and reports true; with gap > 0 only when no run of job started within gap before
// now on any instance, nor within stretch times the latest recorded run's duration (false then,
// nothing recorded). gap 0 always claims: a run a route asked for. Call it while leading job.
func (l *Leader) Claim(ctx context.Context, job string, gap time.Duration, stretch int, workerID string) (bool, error) {
	var g *time.Duration
	if gap > 0 {
		g = &gap
	}
	r, err := jobRow(ctx, l, sqlJobClaim, pgx.StrictNamedArgs{"job": job, "gap": g, "worker": workerID, "stretch": stretch})
	return r.Claimed, err
}

// RemovalCount is what one retention or eviction batch removed from one partition under one
// rule (kind retention, completed_retention or max_wait_time_eviction).
// It is a row of retention_batch and eviction_batch, read by column name.
type RemovalCount struct {
	Tenant       string `db:"tenant"` // the queue's tenant ("" the default one)
	Queue        string `db:"queue"`
	Partition    string `db:"partition"`
	Kind         string `db:"kind"`
	Removed      int64  `db:"removed"`
	Unconsumed   int64  `db:"unconsumed"`    // kind retention: removed messages no consumer had consumed
	DeadLettered int64  `db:"dead_lettered"` // eviction: DLQ entries written
}

// removalRow is a row of retention_batch and eviction_batch: counts, or (kind "") the walk's
// row naming where the next batch starts.
type removalRow struct {
	RemovalCount
	WalkedTo *string `db:"walked_to"`
}

// RetentionBatch removes at most limit messages that retention makes due (docs/api/concepts.md §11)
// and records them under run in the retention history. A run walks the partitions once, batch
// after batch: the first starts at after nil, each next one at the previous one's next; next is
// nil when the walk is done.
func (l *Leader) RetentionBatch(ctx context.Context, run string, limit int, after *string) (counts []RemovalCount, next *string, err error) {
	return l.removals(ctx, sqlRetentionBatch, run, limit, after)
}

// RotateSegments opens the next message segment when active (some queue has a retention rule)
// and the open one is older than width, or none is open; without active it closes the open one.
// It returns the open segment afterwards (0: none). See migration 0023.
func (l *Leader) RotateSegments(ctx context.Context, width time.Duration, active bool) (int, error) {
	r, err := jobRow(ctx, l, sqlSegmentRotate, pgx.StrictNamedArgs{"width": width, "active": active, "now": l.s.nowArg()})
	return r.Seg, err
}

// DueSegments returns the closed segments that closed at least hold ago, oldest first.
func (l *Leader) DueSegments(ctx context.Context, hold time.Duration) ([]int, error) {
	rows, err := jobRows(ctx, l, sqlSegmentsDue, pgx.StrictNamedArgs{"hold": hold, "now": l.s.nowArg()})
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.Seg
	}
	return out, err
}

// DropSegment drops segment seg whole, moving the messages retention may not remove yet to
// seg 0, and records the removed ones under run in the retention history. dropped is false,
// with nothing changed, when the drop's brief lock on messages was not granted in time (see
// qg_segment_drop): a later run drops it.
func (l *Leader) DropSegment(ctx context.Context, run string, seg int) (counts []RemovalCount, dropped bool, err error) {
	rows, err := jobRows(ctx, l, sqlSegmentDrop, pgx.StrictNamedArgs{"run": run, "seg": seg, "now": l.s.nowArg()})
	if pgCode(err) == codeLockNotAvailable {
		return nil, false, nil
	}
	for _, r := range rows {
		counts = append(counts, r.RemovalCount)
	}
	return counts, err == nil, err
}

// DueTombstoneSegments returns the closed tombstone segments whose keys have all expired,
// oldest first (migration 0024).
func (l *Leader) DueTombstoneSegments(ctx context.Context) ([]int, error) {
	rows, err := jobRows(ctx, l, sqlTombstoneSegsDue, pgx.StrictNamedArgs{"now": l.s.nowArg()})
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.Seg
	}
	return out, err
}

// DropTombstoneSegment drops tombstone segment seg whole, moving to tseg 0 the keys a raised
// dedup window keeps taken. dropped is false, with nothing changed, when the drop's brief lock
// was not granted in time (as DropSegment's).
func (l *Leader) DropTombstoneSegment(ctx context.Context, seg int) (dropped bool, err error) {
	r, err := jobRow(ctx, l, sqlTombstoneSegDrop, pgx.StrictNamedArgs{"tseg": seg, "now": l.s.nowArg()})
	if pgCode(err) == codeLockNotAvailable {
		return false, nil
	}
	return r.Dropped && err == nil, err
}

// EvictionBatch dead-letters and removes at most limit messages older than their queue's
// maxWaitTimeSeconds (docs/api/concepts.md §11), recording them under run; its walk is
// RetentionBatch's.
func (l *Leader) EvictionBatch(ctx context.Context, run string, limit int, after *string) (counts []RemovalCount, next *string, err error) {
	return l.removals(ctx, sqlEvictionBatch, run, limit, after)
}

func (l *Leader) removals(ctx context.Context, q readQuery[removalRow], run string, limit int, after *string) ([]RemovalCount, *string, error) {
	rows, err := jobRows(ctx, l, q, pgx.StrictNamedArgs{"run": run, "limit": limit, "after": after, "now": l.s.nowArg()})
	if err != nil {
		return nil, nil, err
	}
	var out []RemovalCount // nil when there is none
	var next *string
	for _, r := range rows {
		if r.Kind == "" {
			next = r.WalkedTo
			continue
		}
		out = append(out, r.RemovalCount)
	}
	return out, next, nil
}

// Housekeeping is what one lease housekeeping run found (a row of lease_housekeeping, read by
// column name).
type Housekeeping struct {
	ExpiredLeases   int64 `db:"expired_leases"`   // leases that expired since the previous run
	RetriesEnded    int64 `db:"retries_ended"`    // retry delays that ended since the previous run
	QueuesSignalled int   `db:"queues_signalled"` // queues whose parked pops were woken
}

// LeaseHousekeeping signals every queue where a lease expired or a retry delay ended since
// the previous run of any instance (the first run ever looks firstWindow back).
func (l *Leader) LeaseHousekeeping(ctx context.Context, workerID string, firstWindow time.Duration) (Housekeeping, error) {
	return jobRow(ctx, l, sqlLeaseHousekeeping, pgx.StrictNamedArgs{"worker": workerID, "first_window": firstWindow, "now": l.s.nowArg()})
}

// CleanupTombstones removes at most limit dedup keys whose window had ended by expiredBy. A
// run passes its own start, so that its loop over full batches ends although keys go on
// expiring as fast as it removes them.
func (l *Leader) CleanupTombstones(ctx context.Context, limit int, expiredBy time.Time) (int64, error) {
	r, err := jobRow(ctx, l, sqlCleanupTombstones, pgx.StrictNamedArgs{"limit": limit, "now": expiredBy})
	return r.Removed, err
}

// CleanupPartitions removes at most limit empty partitions idle for days days.
func (l *Leader) CleanupPartitions(ctx context.Context, days, limit int) (int64, error) {
	r, err := jobRow(ctx, l, sqlCleanupPartitions, pgx.StrictNamedArgs{"days": days, "limit": limit, "now": l.s.nowArg()})
	return r.Removed, err
}

// CleanupHistory removes at most limit rows per history table: stats history older than
// statsDays, retention history and metrics older than metricsDays. more reports that some
// table had more.
func (l *Leader) CleanupHistory(ctx context.Context, statsDays, metricsDays, limit int) (removed int64, more bool, err error) {
	r, err := jobRow(ctx, l, sqlCleanupHistory, pgx.StrictNamedArgs{"stats_days": statsDays, "metrics_days": metricsDays,
		"limit": limit, "now": l.s.nowArg()})
	return r.Removed, r.More, err
}

// StatsPartitions recomputes the counters of at most limit partitions after after ("" = from
// the first, in id order) under run. It returns the last partition done, "" when none was left.
func (l *Leader) StatsPartitions(ctx context.Context, run, after string, limit int) (string, error) {
	r, err := jobRow(ctx, l, sqlStatsPartitions, pgx.StrictNamedArgs{"run": run, "after": nullIfEmpty(after),
		"limit": limit, "now": l.s.nowArg()})
	if err != nil || r.Last == nil {
		return "", classify(err)
	}
	return *r.Last, nil
}

// StatsRollup finishes run: removes what it did not see, recomputes the queue, namespace,
// task and system rows and writes the history.
func (l *Leader) StatsRollup(ctx context.Context, run string) (mq.StatsRefresh, error) {
	r, err := jobRow(ctx, l, sqlStatsRollup, pgx.StrictNamedArgs{"run": run, "now": l.s.nowArg()})
	return mq.StatsRefresh(r), err
}
