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
// with one probe for the whole store: SELECT pg_is_in_recovery() on a newly opened connection,
// within DB_CONNECTION_TIMEOUT, at most one in flight. The call that passed its deadline on a
// database the probe reached is load, answered ErrBusy; so is a probe the server or a pooler
// refused for lack of connection slots (refusedForLoad).
//
// The tracker is a circuit breaker (the states of sony/gobreaker), driven by probes rather than
// by the calls themselves:
//
//   - closed: calls go in. A failed probe answers the call that asked for it ErrUnavailable,
//     and the probe is repeated every probeConfirm until it succeeds (the count starts over)
//     or outageFailures probes in a row have failed: then the outage begins. One failed probe
//     is not enough: in a connection storm, or behind a pooler's queue, a probe's connection
//     may pass DB_CONNECTION_TIMEOUT against a server that is only overloaded.
//   - open (the outage): every call fails at once, without waiting for a connection (a crowd
//     of connection attempts against a frozen host only fills its listen queue, which it then
//     has to work through after the thaw), and the probe repeats at least every probeEvery.
//     Its first success moves to half-open.
//   - half-open: at most outageTrials calls go in, the rest still fail at once; once
//     outageTrials calls or probes have succeeded the outage ends (closed), and any of them
//     failing as if the database were gone reopens it.
//
// Entering half-open starts a new connection generation (stamp, current): every pooled
// connection opened before or during the outage, one to a frozen backend included, is
// destroyed when next taken from the pool instead of being handed out, and replaced by a new
// one then. Nothing is closed at once, so the return does not meet a full pool of reconnects.
//
// The outage is logged once when it begins and once when it ends, with the number of
// requests answered 503 (500 on the transaction route) meanwhile (§9.1).
type outageTracker struct {
	log      *slog.Logger
	now      func() time.Time            // runtime clock; tests replace it
	probe    func(context.Context) error // one probe on a new connection, bounded by itself
	every    time.Duration               // probe cadence during an outage
	confirm  time.Duration               // pause between the probes confirming a failed one
	fresh    time.Duration               // a success this recent also answers a later failure
	failures int                         // failed probes in a row that begin an outage
	trials   int                         // successes in half-open that end it
	ctx      context.Context             // ends the probes at Close
	stop     context.CancelFunc          // ends ctx
	wg       sync.WaitGroup              // the probes and the loops

	// lastOK is when a call last got an answer (Unix nanoseconds; 0: never), for the admin
	// health route; every call sets it, so it is atomic.
	lastOK atomic.Int64
	// state is the breaker's state (closed, open, halfOpen); every call reads it (admit), so it
	// is atomic. It changes only with mu held.
	state atomic.Int32
	// gen is the connection generation: a pooled connection stamped with an older one was
	// opened before or during an outage and is never handed out again (current).
	gen atomic.Uint64
	// downCtx is cancelled when an outage begins (or reopens from half-open), and replaced when
	// the probe reaches the database again: waits in front of the database end on it at once
	// (context.AfterFunc, or its Done channel). Every acquire reads it, so it is an atomic
	// pointer rather than a field under mu.
	downCtx    atomic.Pointer[context.Context]
	downCancel context.CancelFunc // of *downCtx; mu held

	mu         sync.Mutex
	since      time.Time
	answered   int64     // requests answered 503/500 since the outage began
	run        *probeRun // the probe in flight; nil when none
	okAt       time.Time // when the last successful probe ended
	failed     int       // failed probes in a row (closed)
	confirming bool      // the confirmation loop runs (closed, failed > 0)
	admitted   int       // calls let in during half-open
	succeeded  int       // calls or probes that succeeded during half-open
	// What GET /api/v1/system/health reports: the public /health says only connected or
	// disconnected, so the driver's text is kept here for operators (docs/api/admin-api.md §10.2).
	lastErrAt time.Time
	lastErr   string
}

// The breaker's states (outageTracker.state).
const (
	closed   int32 = iota // calls go in; a failed call asks the probe
	open                  // the outage: calls fail at once, the probe repeats
	halfOpen              // the probe reached the database again: a few calls go in
)

// probeRun is one probe: done is closed once err is set.
type probeRun struct {
	done chan struct{}
	err  error
}

// Probe cadence during an outage; the pause between probes confirming a failed one; how long
// a successful probe answers for later failures (a crowd of calls passing their deadlines
// together needs one probe, not one each); how many failed probes in a row begin an outage;
// how many successes in half-open end it.
const (
	probeEvery     = 500 * time.Millisecond
	probeConfirm   = 100 * time.Millisecond
	probeFresh     = 250 * time.Millisecond
	outageFailures = 3
	outageTrials   = 3
)

func newOutageTracker(log *slog.Logger, probe func(context.Context) error) *outageTracker {
	if log == nil {
		log = slog.Default()
	}
	t := &outageTracker{log: log.With("component", "store"), now: time.Now, probe: probe,
		every: probeEvery, confirm: probeConfirm, fresh: probeFresh, failures: outageFailures, trials: outageTrials}
	t.ctx, t.stop = context.WithCancel(context.Background())
	t.renewDown()
	return t
}

// close ends the probe in flight and the loops, and waits for them.
func (t *outageTracker) close() {
	t.stop()
	t.wg.Wait()
}

// isDown reports whether an outage is under way (open or half-open).
func (t *outageTracker) isDown() bool { return t.state.Load() != closed }

// downContext returns the context an outage cancels when it begins (cancelled already while
// one is under way, except in half-open).
func (t *outageTracker) downContext() context.Context { return *t.downCtx.Load() }

// renewDown makes the context the next outage cancels; t.mu is held (or t is new).
func (t *outageTracker) renewDown() {
	ctx, cancel := context.WithCancel(context.Background())
	t.downCtx.Store(&ctx)
	t.downCancel = cancel
}

// errOutage fails a call at once while an outage is under way; errRecovering while the
// probe reaches the database again and the calls let in test it.
var (
	errOutage     = fmt.Errorf("%w: an outage is under way (the probe has not reached it yet)", mq.ErrUnavailable)
	errRecovering = fmt.Errorf("%w: an outage is ending (the probe reaches it; a few calls test it first)", mq.ErrUnavailable)
)

// failedFast reports whether err is a call the tracker failed without letting it in.
func failedFast(err error) bool { return errors.Is(err, errOutage) || errors.Is(err, errRecovering) }

// admit lets a call in, or fails it at once during an outage: in half-open, the first
// t.trials calls go in.
func (t *outageTracker) admit() error {
	switch t.state.Load() {
	case closed:
		return nil
	case open:
		return errOutage
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state.Load() {
	case closed:
		return nil
	case halfOpen:
		if t.admitted < t.trials {
			t.admitted++
			return nil
		}
		return errRecovering
	}
	return errOutage
}

// stamp marks a newly opened connection with the current generation (pgxpool's AfterConnect).
func (t *outageTracker) stamp(c *pgconn.PgConn) { c.CustomData()[genKey] = t.gen.Load() }

// current reports whether a pooled connection belongs to the current generation, that is was
// opened after the last outage (pgxpool's PrepareConn: one that does not is destroyed and
// another taken).
func (t *outageTracker) current(c *pgconn.PgConn) bool {
	g, ok := c.CustomData()[genKey].(uint64)
	return ok && g == t.gen.Load()
}

// genKey is the key of the generation in a connection's CustomData.
const genKey = "queen.outage.generation"

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
// way or the probe fails, ErrBusy when the probe reaches the database, when PostgreSQL itself
// ended the call (statement_timeout, lock_timeout: it is there), or when the server or a
// pooler refused it for lack of connection slots. Other errors, calls the tracker failed at
// once, and calls a client abandoned pass through. The wait for the probe ends at by, the
// request's own answer bound: a probe still out then leaves the call unavailable, and decides
// on its own.
func (t *outageTracker) judge(ctx context.Context, err error, by time.Time) error {
	if !errors.Is(err, mq.ErrUnavailable) || failedFast(err) || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && isServerTimeout(pgErr.Code) {
		return busyError{cause: err, pg: pgErr}
	}
	if refusedForLoad(err) {
		return busyError{cause: err}
	}
	if t.healthy(by, err) {
		return busyError{cause: err}
	}
	return err
}

// healthy reports whether the probe reaches the database: a recent success, the probe in
// flight, or a new one started now for cause. It is false at once during an outage (a call
// let in during half-open that fails reopens it), and when no answer came by by.
func (t *outageTracker) healthy(by time.Time, cause error) bool {
	t.mu.Lock()
	switch t.state.Load() {
	case halfOpen:
		t.reopen(cause)
		fallthrough
	case open:
		t.mu.Unlock()
		return false
	}
	if t.failed == 0 && !t.okAt.IsZero() && t.now().Sub(t.okAt) < t.fresh {
		t.mu.Unlock()
		return true
	}
	r := t.startProbe(cause)
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

// startProbe returns the probe in flight, or starts one for cause; t.mu is held.
func (t *outageTracker) startProbe(cause error) *probeRun {
	if t.run == nil {
		t.run = &probeRun{done: make(chan struct{})}
		t.wg.Add(1)
		go t.runProbe(t.run, cause)
	}
	return t.run
}

// runProbe runs one probe while the breaker is closed: a success clears the failures, a
// failure counts one, and begins an outage when it makes t.failures in a row; the first
// failure starts the loop that confirms it (cause is the call that asked for the probe).
func (t *outageTracker) runProbe(r *probeRun, cause error) {
	defer t.wg.Done()
	err := t.probe(t.ctx)
	t.mu.Lock()
	t.run, r.err = nil, err
	switch {
	case t.ctx.Err() != nil || t.state.Load() != closed:
	case err == nil:
		t.okAt, t.failed = t.now(), 0
	default:
		t.failed++
		t.lastErr, t.lastErrAt = err.Error(), t.now()
		if t.failed >= t.failures {
			t.begin(cause, err)
		} else if !t.confirming {
			t.confirming = true
			t.wg.Add(1)
			go t.confirmLoop(cause)
		}
	}
	t.mu.Unlock()
	close(r.done)
}

// confirmLoop probes every t.confirm after a failed probe until one succeeds or the outage
// begins, so that a failure is confirmed or cleared whether calls keep failing or not.
func (t *outageTracker) confirmLoop(cause error) {
	defer t.wg.Done()
	for {
		timer := time.NewTimer(t.confirm)
		select {
		case <-timer.C:
		case <-t.ctx.Done():
			timer.Stop()
			return
		}
		t.mu.Lock()
		if t.failed == 0 || t.state.Load() != closed {
			t.confirming = false
			t.mu.Unlock()
			return
		}
		r := t.startProbe(cause)
		t.mu.Unlock()
		select {
		case <-r.done:
		case <-t.ctx.Done():
			return
		}
	}
}

// begin starts an outage: every wait in front of the database ends, every call fails at once,
// and the probe repeats until the outage ends. t.mu is held.
func (t *outageTracker) begin(cause, probeErr error) {
	t.since, t.answered, t.failed = t.now(), 0, 0
	t.state.Store(open)
	t.lastErr, t.lastErrAt = cause.Error(), t.since
	t.downCancel()
	t.log.Error("database unavailable: answering 503 (500 on transactions) until it is back",
		"err", cause, "probe", probeErr, "failed_probes", t.failures)
	t.wg.Add(1)
	go t.repeat()
}

// reopen returns from half-open to the outage: a call let in failed. t.mu is held.
func (t *outageTracker) reopen(cause error) {
	t.state.Store(open)
	t.lastErr, t.lastErrAt = cause.Error(), t.now()
	t.downCancel()
}

// repeat probes at least every t.every until the outage ends: in the outage a success moves to
// half-open, in half-open it counts as one of the successes that end it, and a failure there
// reopens it.
func (t *outageTracker) repeat() {
	defer t.wg.Done()
	start := time.Now() // the failed probe that began the outage has just ended
	for {
		timer := time.NewTimer(t.every - time.Since(start))
		select {
		case <-timer.C:
		case <-t.ctx.Done():
			timer.Stop()
			return
		}
		start = time.Now()
		err := t.probe(t.ctx)
		if t.ctx.Err() != nil || t.probed(err) {
			return
		}
	}
}

// probed records the outcome of a probe during an outage; it reports whether the outage ended.
func (t *outageTracker) probed(err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil && t.state.Load() == halfOpen:
		t.reopen(err)
	case err != nil:
		t.lastErr, t.lastErrAt = err.Error(), t.now()
	case t.state.Load() == open:
		// A new generation: no connection opened before now is handed out again.
		t.gen.Add(1)
		t.admitted, t.succeeded = 0, 0
		t.renewDown()
		t.state.Store(halfOpen)
	default:
		t.succeed()
	}
	return t.state.Load() == closed
}

// succeed counts one success in half-open, and ends the outage at t.trials. t.mu is held.
func (t *outageTracker) succeed() {
	if t.state.Load() != halfOpen {
		return
	}
	if t.succeeded++; t.succeeded < t.trials {
		return
	}
	t.okAt, t.failed = t.now(), 0
	t.lastOK.Store(t.okAt.UnixNano())
	t.state.Store(closed)
	t.log.Info("database available again", "outage", t.now().Sub(t.since).Round(time.Millisecond),
		"requests_failed", t.answered)
}

// observe records the outcome of one database call, after judge: ErrUnavailable marks the
// request as failed by the database, ErrBusy as answered for load; any answer of the database
// is noted for the admin health route, and counts in half-open. A call the client abandoned
// (context.Canceled) says nothing about the database.
func (t *outageTracker) observe(ctx context.Context, err error) {
	switch {
	case errors.Is(err, mq.ErrUnavailable):
		budget.MarkUnavailable(ctx)
		if failedFast(err) {
			return // no new text: the outage's own (its probe's) says more
		}
		t.mu.Lock()
		t.lastErr, t.lastErrAt = err.Error(), t.now()
		t.mu.Unlock()
	case errors.Is(err, mq.ErrBusy):
		budget.MarkBusy(ctx)
	case err == nil || !errors.Is(err, context.Canceled):
		t.lastOK.Store(t.now().UnixNano()) // every successful call: no lock
		if t.state.Load() == halfOpen {
			t.mu.Lock()
			t.succeed()
			t.mu.Unlock()
		}
	}
}

// answeredOne counts one request answered 503/500 because of the database.
func (t *outageTracker) answeredOne() {
	t.mu.Lock()
	t.answered++
	t.mu.Unlock()
}
