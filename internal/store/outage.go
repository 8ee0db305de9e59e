package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// A deadline that passes, or a connection that fails, proves only that one call went wrong:
// on a loaded machine a burst of requests or one large call passes deadlines against a
// perfectly healthy database. outageTracker tells the two apart (docs/api/operations.md §9.7)
// with one probe for the whole store: SELECT 1 on a newly opened connection, within
// DB_CONNECTION_TIMEOUT, at most one in flight. Only a failed probe starts an outage; the call
// that passed its deadline on a database the probe reached is load, answered ErrBusy.
//
// During an outage every call fails at once, without waiting for a connection (a crowd of
// connection attempts against a frozen host only fills its listen queue, which it then has to
// work through after the thaw), and the probe repeats at least every 500 ms. Its first success
// closes every pooled connection, opened before or during the outage, without waiting on any
// (one to a frozen backend may never answer), and ends the outage: the next calls open fresh
// ones. The outage is logged once when it begins and once when it ends, with the number of
// requests answered 503 (500 on the transaction route) meanwhile (§9.1).
type outageTracker struct {
	log   *slog.Logger
	now   func() time.Time            // runtime clock; tests replace it
	probe func(context.Context) error // one SELECT 1 on a new connection, bounded by itself
	reset func()                      // closes the pool's connections once an outage ends
	every time.Duration               // probe cadence during an outage
	fresh time.Duration               // a success this recent also answers a later failure
	ctx   context.Context             // ends the probes at Close
	stop  context.CancelFunc          // ends ctx
	wg    sync.WaitGroup              // the probe and the outage loop

	// lastOK is when a call last got an answer (Unix nanoseconds; 0: never), for the admin
	// health route; every call sets it, so it is atomic.
	lastOK atomic.Int64
	// down is set while an outage lasts; every call checks it (acquire), so it is atomic.
	down atomic.Bool
	// downCtx is cancelled when an outage begins, and replaced once it ends: waits in front of
	// the database end on it at once (context.AfterFunc, or its Done channel). Every acquire
	// reads it, so it is an atomic pointer rather than a field under mu.
	downCtx    atomic.Pointer[context.Context]
	downCancel context.CancelFunc // of *downCtx; mu held

	mu       sync.Mutex
	since    time.Time
	answered int64     // requests answered 503/500 since the outage began
	run      *probeRun // the probe in flight; nil when none
	okAt     time.Time // when the last successful probe ended
	// What GET /api/v1/system/health reports: the public /health says only connected or
	// disconnected, so the driver's text is kept here for operators (docs/api/admin-api.md §10.2).
	lastErrAt time.Time
	lastErr   string
}

// probeRun is one probe: done is closed once err is set.
type probeRun struct {
	done chan struct{}
	err  error
}

// Probe cadence during an outage, and how long a successful probe answers for later failures
// (a crowd of calls passing their deadlines together needs one probe, not one each).
const (
	probeEvery = 500 * time.Millisecond
	probeFresh = 250 * time.Millisecond
)

func newOutageTracker(log *slog.Logger, probe func(context.Context) error, reset func()) *outageTracker {
	if log == nil {
		log = slog.Default()
	}
	t := &outageTracker{log: log.With("component", "store"), now: time.Now, probe: probe, reset: reset,
		every: probeEvery, fresh: probeFresh}
	t.ctx, t.stop = context.WithCancel(context.Background())
	t.renewDown()
	return t
}

// close ends the probe in flight and the outage loop, and waits for them.
func (t *outageTracker) close() {
	t.stop()
	t.wg.Wait()
}

// isDown reports whether an outage is under way.
func (t *outageTracker) isDown() bool { return t.down.Load() }

// downContext returns the context an outage cancels when it begins (cancelled already while
// one is under way).
func (t *outageTracker) downContext() context.Context { return *t.downCtx.Load() }

// renewDown makes the context the next outage cancels; t.mu is held (or t is new).
func (t *outageTracker) renewDown() {
	ctx, cancel := context.WithCancel(context.Background())
	t.downCtx.Store(&ctx)
	t.downCancel = cancel
}

// errOutage fails a call at once while an outage is under way.
var errOutage = fmt.Errorf("%w: an outage is under way (the probe has not reached it yet)", mq.ErrUnavailable)

// busyError is ErrBusy caused by a call that failed as if the database were gone. It does not
// unwrap to its cause, so that errors.Is(err, mq.ErrUnavailable) is false for it, only to the
// PostgreSQL error when PostgreSQL itself ended the call: the transaction route and stream
// cycles answer that as their rollback, and a merged call is retried request by request.
type busyError struct {
	cause error
	pg    *pgconn.PgError // nil unless PostgreSQL reported the timeout
}

func (e busyError) Error() string        { return "server busy (the database answers): " + e.cause.Error() }
func (e busyError) Is(target error) bool { return target == mq.ErrBusy }

// Unwrap returns PostgreSQL's own error, if it reported one.
func (e busyError) Unwrap() error {
	if e.pg == nil {
		return nil
	}
	return e.pg
}

// judge turns the error of a call that failed as if the database were gone (ErrUnavailable: a
// connection error, a passed deadline) into its answer: ErrUnavailable when an outage is under
// way or the probe fails (which begins one), ErrBusy when the probe reaches the database, or
// when PostgreSQL itself ended the call (statement_timeout, lock_timeout: it is there). Other
// errors, and calls a client abandoned, pass through. The wait for the probe ends at by, the
// request's own answer bound: a probe still out then leaves the call unavailable, and decides
// about the outage on its own.
func (t *outageTracker) judge(ctx context.Context, err error, by time.Time) error {
	if !errors.Is(err, mq.ErrUnavailable) || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && isServerTimeout(pgErr.Code) {
		return busyError{cause: err, pg: pgErr}
	}
	if t.healthy(by, err) {
		return busyError{cause: err}
	}
	return err
}

// healthy reports whether the probe reaches the database: a recent success, the probe in
// flight, or a new one started now for cause. It is false at once during an outage, and when
// no answer came by by.
func (t *outageTracker) healthy(by time.Time, cause error) bool {
	t.mu.Lock()
	if t.down.Load() {
		t.mu.Unlock()
		return false
	}
	if !t.okAt.IsZero() && t.now().Sub(t.okAt) < t.fresh {
		t.mu.Unlock()
		return true
	}
	r := t.run
	if r == nil {
		r = &probeRun{done: make(chan struct{})}
		t.run = r
		t.wg.Add(1)
		go t.runProbe(r, cause)
	}
	t.mu.Unlock()
	timer := time.NewTimer(time.Until(by))
	defer timer.Stop()
	select {
	case <-r.done:
		return r.err == nil
	case <-timer.C:
		return false
	}
}

// runProbe runs one probe; a failure begins an outage (cause is the call that asked for it).
func (t *outageTracker) runProbe(r *probeRun, cause error) {
	defer t.wg.Done()
	err := t.probe(t.ctx)
	t.mu.Lock()
	t.run, r.err = nil, err
	switch {
	case err == nil:
		t.okAt = t.now()
	case t.ctx.Err() == nil && !t.down.Load():
		t.begin(cause, err)
	}
	t.mu.Unlock()
	close(r.done)
}

// begin starts an outage: every wait in front of the database ends, every call fails at once,
// and the probe repeats until it succeeds. t.mu is held.
func (t *outageTracker) begin(cause, probeErr error) {
	t.since, t.answered = t.now(), 0
	t.down.Store(true)
	t.lastErr, t.lastErrAt = cause.Error(), t.since
	t.downCancel()
	t.log.Error("database unavailable: answering 503 (500 on transactions) until it is back",
		"err", cause, "probe", probeErr)
	t.wg.Add(1)
	go t.repeat()
}

// repeat probes at least every t.every until a probe succeeds, then ends the outage.
func (t *outageTracker) repeat() {
	defer t.wg.Done()
	for {
		start := time.Now()
		err := t.probe(t.ctx)
		if t.ctx.Err() != nil {
			return
		}
		if err == nil {
			t.end()
			return
		}
		t.mu.Lock()
		t.lastErr, t.lastErrAt = err.Error(), t.now()
		t.mu.Unlock()
		timer := time.NewTimer(t.every - time.Since(start))
		select {
		case <-timer.C:
		case <-t.ctx.Done():
			timer.Stop()
			return
		}
	}
}

// end closes the pooled connections, then lets calls in again.
func (t *outageTracker) end() {
	if t.reset != nil {
		t.reset()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.okAt = t.now()
	t.lastOK.Store(t.okAt.UnixNano())
	t.renewDown()
	t.down.Store(false)
	t.log.Info("database available again", "outage", t.now().Sub(t.since).Round(time.Millisecond),
		"requests_failed", t.answered)
}

// observe records the outcome of one database call, after judge: ErrUnavailable marks the
// request as failed by the database, ErrBusy as answered for load; any answer of the database
// is noted for the admin health route. A call the client abandoned (context.Canceled) says
// nothing about the database.
func (t *outageTracker) observe(ctx context.Context, err error) {
	switch {
	case errors.Is(err, mq.ErrUnavailable):
		budget.MarkUnavailable(ctx)
		if errors.Is(err, errOutage) {
			return // no new text: the outage's own (its probe's) says more
		}
		t.mu.Lock()
		t.lastErr, t.lastErrAt = err.Error(), t.now()
		t.mu.Unlock()
	case errors.Is(err, mq.ErrBusy):
		budget.MarkBusy(ctx)
	case err == nil || !errors.Is(err, context.Canceled):
		t.lastOK.Store(t.now().UnixNano()) // every successful call: no lock
	}
}

// answeredOne counts one request answered 503/500 because of the database.
func (t *outageTracker) answeredOne() {
	t.mu.Lock()
	t.answered++
	t.mu.Unlock()
}

// Answered is called once a request is done: when one of its calls found the database
// unavailable (so it answered 503, or 500 on the transaction route), it counts towards the
// outage's summary line. ctx is the context given to budget.Request.
func (s *Store) Answered(ctx context.Context) {
	if budget.Unavailable(ctx) {
		s.outage.answeredOne()
	}
}

// outcome is the end of every database call: its error judged (judge) and recorded (observe).
func (s *Store) outcome(ctx context.Context, err error) error {
	if err == nil {
		s.outage.observe(ctx, nil)
		return nil
	}
	err = s.outage.judge(ctx, err, s.limits().AnswerBy(ctx))
	s.outage.observe(ctx, err)
	return err
}

// Judge answers a wait in front of the database that ended unavailable (a queue of the
// broker's past its deadline) the way a call's failure is answered: ErrBusy when the probe
// reaches the database, ErrUnavailable when it does not. The request is marked for the outage
// summary or the overload counter.
func (s *Store) Judge(ctx context.Context, err error) error { return s.outcome(ctx, err) }

// OutageBegun returns a channel closed when an outage begins (closed already while one is
// under way): the broker's queues in front of the database end their waits on it.
func (s *Store) OutageBegun() <-chan struct{} { return s.outage.downContext().Done() }

// probe is the outage probe: SELECT 1 on a newly opened connection (never a pooled one, which
// may be stuck in a frozen backend) within DB_CONNECTION_TIMEOUT. A server that refuses the
// session because it is full answers: it is there. A server in recovery (a standby) cannot
// take the broker's writes, so it fails the probe.
func (s *Store) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cfg := s.pool.Config().ConnConfig.Config
	c, err := pgconn.ConnectConfig(ctx, &cfg)
	if err != nil {
		if serverFull(err) {
			return nil
		}
		return err
	}
	defer closeWithin(c, 100*time.Millisecond)
	res := c.ExecParams(ctx, "SELECT pg_is_in_recovery()", nil, nil, nil, nil).Read()
	if res.Err != nil {
		return res.Err
	}
	if len(res.Rows) != 1 || string(res.Rows[0][0]) != "f" {
		return errors.New("the database is in recovery (read-only)")
	}
	return nil
}

// closeWithin closes c, waiting at most d (a Terminate to a frozen server is not waited for).
func closeWithin(c *pgconn.PgConn, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = c.Close(ctx)
}
