// Package maintenance runs the background jobs of docs/api/operations.md §5 — retention, eviction,
// lease housekeeping and stats — on whichever broker instance wins each job's advisory lock.
//
// Every job run holds its own PostgreSQL advisory lock on a connection of its own while it
// works (store.TryLead), so one instance at a time runs a given job across the cluster, and a
// dead instance's lock frees with its connection. Work happens in bounded batches, each its
// own transaction, so pushes, pops and acks never wait long on a job. "Now" comes from the
// store's clock (store.SetClock), so tests drive the jobs with a fake clock instead of sleeping.
package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// Config holds the jobs' intervals and limits (docs/api/operations.md §1.3). A zero interval keeps that
// job from running on its own; RunOnce still runs it.
type Config struct {
	WorkerID                  string // recorded with the lease housekeeping window
	RetentionInterval         time.Duration
	EvictionInterval          time.Duration
	LeaseHousekeepingInterval time.Duration
	StatsInterval             time.Duration
	RetentionBatchSize        int
	EvictionBatchSize         int
	PartitionCleanupDays      int
	MetricsRetentionDays      int
	StatsHistoryRetentionDays int
	// CompactInterval is how often the instance checks the hot sets' dead row versions and
	// rewrites those a held snapshot horizon keeps (compact.go); 0: never.
	CompactInterval time.Duration
	// Recorder receives the DLQ entries eviction writes and the leases housekeeping finds
	// expired, for the metrics; nil records nothing.
	Recorder Recorder
}

// Recorder counts what the jobs do that the metrics report.
type Recorder interface {
	DeadLettered(tenant, queue string, n int64)
	LeasesExpired(n int64)
}

// Runner schedules the jobs on one instance, one goroutine per scheduled job, owned by its
// lifecycle. It is safe for concurrent use; a nil *Runner reports no states and runs nothing.
// RunOnce and RefreshStats work whether or not the schedule runs.
type Runner struct {
	lifecycle.StartStop
	lifecycle.Base

	st   *store.Store
	cfg  Config
	log  *slog.Logger
	jobs map[string]jobSpec

	mu     sync.Mutex
	states map[string]*mq.JobState
	// compactions and compactBlockers are the hot sets' rewrites on this instance and the
	// last session reported blocking each (compact.go).
	compactions     map[string]CompactionCount
	compactBlockers map[string]int
	// compactWarned is the reason of the last warning about each set that kept it from being
	// rewritten (warnOnce), cleared by its next rewrite.
	compactWarned map[string]string

	hostname string // recorded with each run (GET /api/v1/system/jobs)

	// cadence is, per job with a cadence (jobSpec), the interval it last asked for on this
	// instance; 0 or absent, the configured one.
	cadence map[string]time.Duration
}

type jobSpec struct {
	interval time.Duration
	// cadence, when set, reads the interval the job asks for now from what the database holds
	// (0: interval, which stays the longest); the loop looks every cadenceLook whether that
	// has come, so a change (a queue configured with a short retention) is served within it.
	cadence func(context.Context) (time.Duration, error)
	// stretch, when set, spaces the job's scheduled runs by at least that many times the
	// latest run's duration (store.Leader.Claim): it runs at most 1/stretch of the time.
	stretch int
	work    func(context.Context, *store.Leader) error
}

// statsStretch keeps the stats job to a tenth of the time: it only serves the status routes,
// and over a hundred thousand partitions a run takes longer than its interval (every partition
// recomputed), which would otherwise keep a backend busy for good beside the data path.
const statsStretch = 10

// New returns a runner over st; Start schedules its jobs.
func New(st *store.Store, cfg Config, log *slog.Logger) *Runner {
	cfg.RetentionBatchSize = max(cfg.RetentionBatchSize, 1)
	cfg.EvictionBatchSize = max(cfg.EvictionBatchSize, 1)
	r := &Runner{Base: lifecycle.NewBase("maintenance", log, nil), st: st, cfg: cfg, states: map[string]*mq.JobState{},
		compactions: map[string]CompactionCount{}, compactBlockers: map[string]int{}, compactWarned: map[string]string{},
		cadence: map[string]time.Duration{}}
	r.hostname, _ = os.Hostname()
	r.log = r.Logger()
	r.jobs = map[string]jobSpec{
		mq.JobRetention: {interval: cfg.RetentionInterval, work: r.retention,
			cadence: func(ctx context.Context) (time.Duration, error) {
				shortest, err := st.ShortestRetention(ctx)
				return retentionCadence(shortest), err
			}},
		mq.JobEviction:          {interval: cfg.EvictionInterval, work: r.eviction},
		mq.JobLeaseHousekeeping: {interval: cfg.LeaseHousekeepingInterval, work: r.leaseHousekeeping},
		mq.JobStats: {interval: cfg.StatsInterval, stretch: statsStretch,
			work: func(ctx context.Context, l *store.Leader) error { _, err := r.stats(ctx, l); return err }},
	}
	for _, j := range mq.JobNames {
		r.states[j] = &mq.JobState{State: mq.JobStopped}
	}
	return r
}

// Start runs each job with a non-zero interval now and then every interval until Stop.
func (r *Runner) Start(ctx context.Context) error {
	return r.StartWith(ctx, func(context.Context) error {
		for _, name := range mq.JobNames {
			if spec := r.jobs[name]; spec.interval > 0 {
				r.Go(func(ctx context.Context) { r.loop(ctx, name, spec) })
			}
		}
		if r.cfg.CompactInterval > 0 {
			r.Go(r.compactLoop)
		}
		return nil
	})
}

// Stop ends the schedule and waits for running jobs to return: a running job finishes the
// batch statement in flight, starts no other, and releases its lock before Stop returns.
func (r *Runner) Stop() {
	r.StartStop.Stop()
	r.mu.Lock()
	for _, s := range r.states {
		s.State, s.Leader = mq.JobStopped, false
	}
	r.mu.Unlock()
}

// scheduleSlack is the share of a job's interval a tick may come early by and still run:
// instances tick independently, and a tick of the instance that ran last comes one interval
// after its claim give or take the claim's own latency, which must not cost it a whole interval.
const scheduleSlack = 10 // percent

// cadenceLook is how often the loop of a job with a cadence reads it.
const cadenceLook = 10 * time.Second

func (r *Runner) loop(ctx context.Context, name string, spec jobSpec) {
	every, tick := spec.interval, spec.interval
	if spec.cadence != nil {
		tick = min(every, cadenceLook)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	unavailable := false // during a database outage a job fails every tick: say so once
	var last time.Time   // this instance's latest attempt
	for {
		r.refreshCadence(ctx, name)
		wait := r.interval(name, every)
		gap := wait - wait*scheduleSlack/100
		if !last.IsZero() && time.Since(last) < gap {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				continue
			}
		}
		last = time.Now()
		_, err := r.run(ctx, name, gap)
		switch {
		case err == nil || ctx.Err() != nil:
			unavailable = false
		case errors.Is(err, mq.ErrUnavailable):
			if !unavailable {
				r.log.Warn("background job failed; retrying quietly until the database is back", "job", name, "err", err)
			}
			unavailable = true
		default:
			r.log.Warn("background job failed", "job", name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ErrUnknownJob is returned by RunOnce for a name not in Jobs.
var ErrUnknownJob = errors.New("unknown job")

// RunOnce runs one job now if this instance can take its lock; ran is false when another
// instance (or another run on this one) holds it.
func (r *Runner) RunOnce(ctx context.Context, name string) (ran bool, err error) {
	ran, err = r.run(ctx, name, 0)
	r.refreshCadence(ctx, name)
	return ran, err
}

// refreshCadence reads the interval job name asks for now, when it has a cadence, keeping the
// last one known when the read fails.
func (r *Runner) refreshCadence(ctx context.Context, name string) {
	spec := r.jobs[name]
	if spec.cadence == nil {
		return
	}
	d, err := spec.cadence(ctx)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.cadence[name] = d
	r.mu.Unlock()
}

// run runs one job if this instance can take its lock and, with gap > 0, no run of it started
// within gap on any instance (the schedule holds across the cluster: docs/api/operations.md §5).
func (r *Runner) run(ctx context.Context, name string, gap time.Duration) (ran bool, err error) {
	spec, ok := r.jobs[name]
	if !ok {
		return false, ErrUnknownJob
	}
	return r.lead(ctx, name, gap, spec.work)
}

// RefreshStats recomputes the stats now (docs/api/admin-api.md §8). ran is false, with nothing done,
// when another run holds the stats lock.
func (r *Runner) RefreshStats(ctx context.Context) (res mq.StatsRefresh, ran bool, err error) {
	// A bulk route: DB_STATEMENT_TIMEOUT for all its work (docs/api/operations.md §9.1).
	ran, err = r.lead(budget.Bulk(ctx), mq.JobStats, 0, func(ctx context.Context, l *store.Leader) error {
		var err error
		res, err = r.stats(ctx, l)
		return err
	})
	return res, ran, err
}

// lead runs work under name's lock, once its start is claimed in the job's schedule (gap as
// in run), and records the outcome in the job's state and, for a run that happened, in the
// database's run records every instance reads (docs/api/admin-api.md §10.3). A run another
// instance started within gap leaves this one in standby, as a held lock does.
func (r *Runner) lead(ctx context.Context, name string, gap time.Duration, work func(context.Context, *store.Leader) error) (bool, error) {
	start, startedAt := time.Now(), r.st.Now()
	due := true
	led, err := r.st.TryLead(ctx, name, func(l *store.Leader) error {
		var err error
		if due, err = l.Claim(ctx, name, gap, r.jobs[name].stretch, r.cfg.WorkerID); err != nil || !due {
			return err
		}
		r.update(name, func(s *mq.JobState) { s.State, s.Leader = mq.JobRunning, true })
		return work(ctx, l)
	})
	ran := led && due
	r.update(name, func(s *mq.JobState) {
		switch {
		case ran:
			at := start
			s.LastRunAt, s.LastDuration, s.Runs = &at, time.Since(start), s.Runs+1
			s.State, s.LastError = mq.JobIdle, ""
			if err != nil {
				s.State, s.LastError = mq.JobFailed, err.Error()
			}
		case err != nil:
			s.State, s.Leader, s.LastError = mq.JobFailed, false, err.Error()
		default:
			s.State, s.Leader = mq.JobStandby, false
		}
	})
	if ran {
		r.recordRun(ctx, mq.JobRun{Job: name, StartedAt: startedAt, WorkerID: r.cfg.WorkerID, Hostname: r.hostname,
			Duration: time.Since(start), Error: errText(err)})
	}
	return ran, err
}

// recordJobTimeout bounds the write of one run record.
const recordJobTimeout = 5 * time.Second

// recordRun writes a run record. It outlives a cancelled ctx (the run happened, also when Stop
// ended it); a failure to record (the database is away) is logged and the run goes unrecorded.
func (r *Runner) recordRun(ctx context.Context, run mq.JobRun) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordJobTimeout)
	defer cancel()
	if err := r.st.RecordJobRun(ctx, run); err != nil {
		r.log.Debug("job run not recorded", "job", run.Job, "err", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (r *Runner) update(name string, fn func(*mq.JobState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.states[name])
}

// interval is job name's interval now: its configured one (every), or shorter when its latest
// run asked for that.
func (r *Runner) interval(name string, every time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.cadence[name]; c > 0 && c < every {
		return c
	}
	return every
}

// Intervals returns every job's interval on this instance (0: not scheduled here); nil for a
// nil runner.
func (r *Runner) Intervals() map[string]time.Duration {
	if r == nil {
		return nil
	}
	out := make(map[string]time.Duration, len(r.jobs))
	for name, j := range r.jobs {
		out[name] = j.interval
		if j.interval > 0 {
			out[name] = r.interval(name, j.interval)
		}
	}
	return out
}

// States returns a copy of every job's state; nil for a nil runner.
func (r *Runner) States() map[string]mq.JobState {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]mq.JobState, len(r.states))
	for k, v := range r.states {
		out[k] = *v
	}
	return out
}
