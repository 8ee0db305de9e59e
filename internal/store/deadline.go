package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Database deadlines (docs/api/operations.md §9.1, §9.7) are kept on the broker's own clock: a
// PostgreSQL host that accepts TCP and never answers enforces no statement_timeout and sends
// no error, so only the broker can end a call.
//
// A request's clock starts lazily, the first time it waits in front of the database (the push
// coalescer, the pop and consume gates, the pool) or sends a statement, so that reading a slow
// body or parking a pop costs nothing. From then on:
//
//   - its waits are load, not an outage: together they may last until DB_REQUEST_TIMEOUT
//     (DB_STATEMENT_TIMEOUT on the bulk routes) from that start. A wait for a pooled connection
//     that reaches DB_CONNECTION_TIMEOUT asks the outage probe (outage.go) whether the
//     database is there, and an outage ends every wait at once;
//   - its statements share DB_REQUEST_TIMEOUT from the first of them, ending no later than
//     DB_CONNECTION_TIMEOUT + DB_REQUEST_TIMEOUT from the start, so a request answers within
//     that plus the second the probe may take, whatever mix of waits and calls it makes.

// budget is the deadline state of one request's database work.
type budget struct {
	mu        sync.Mutex
	begun     time.Time     // zero until the request first waits or sends a statement
	waitUntil time.Time     // when set, the end of its waits instead (a merged call's)
	workUntil time.Time     // zero until its first statement
	bulk      bool          // the work deadline is bulkTimeout
	workFor   time.Duration // when set, the work deadline instead (migrations)
	// unavailable is set when a call of the request failed because the database was
	// unavailable: the request then answers 503 (500 on the transaction route), which the
	// outage tracker counts once the request is done. busy is set when it was answered as
	// load instead (ErrBusy), which the overload counter counts.
	unavailable, busy bool
}

type budgetKey struct{}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// Request returns ctx carrying a fresh deadline budget for one request (or one attempt of a
// long-poll pop): its waits and statements share DB_REQUEST_TIMEOUT.
// A call on a context without a budget gets one of its own.
func Request(ctx context.Context) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{})
}

// OneBudget returns ctx with a budget, adding one when it has none, so that several calls
// (creating partitions, then pushing; a pop's gate and its statement) share one deadline even
// when the caller set none.
func OneBudget(ctx context.Context) context.Context {
	if budgetOf(ctx) != nil {
		return ctx
	}
	return Request(ctx)
}

// Bulk returns ctx whose database work is bounded by DB_STATEMENT_TIMEOUT instead of
// DB_REQUEST_TIMEOUT: the bulk admin routes (queue deletion, stats refresh) and migrations.
// The time already spent by the request still counts.
func Bulk(ctx context.Context) context.Context {
	nb := &budget{bulk: true}
	if b := budgetOf(ctx); b != nil {
		b.mu.Lock()
		nb.begun = b.begun
		b.mu.Unlock()
	}
	return context.WithValue(ctx, budgetKey{}, nb)
}

// workFor is the work deadline of b; b.mu is held.
func (s *Store) workFor(b *budget) time.Duration {
	switch {
	case b.workFor > 0:
		return b.workFor
	case b.bulk:
		return s.bulkTimeout
	}
	return s.requestTimeout
}

// startClock starts b's clock now unless it runs; b.mu is held.
func (b *budget) startClock(now time.Time) {
	if b.begun.IsZero() {
		b.begun = now
	}
}

// WaitDeadline is when the request's waits in front of the database must end: DB_REQUEST_TIMEOUT
// after its clock started (a merged call's: the earliest of its requests'), or sooner when its
// work deadline is nearer. The broker's queues (push coalescer, pop and consume gates) use it,
// so waiting in them counts against the same budget as the pool.
func (s *Store) WaitDeadline(ctx context.Context) time.Time {
	_, until := s.waitBounds(ctx)
	return until
}

// waitBounds starts the request's clock unless it runs and returns when a wait for a pooled
// connection asks the outage probe whether the database is there (DB_CONNECTION_TIMEOUT after
// the start) and when every wait must end (WaitDeadline).
func (s *Store) waitBounds(ctx context.Context) (probeAt, until time.Time) {
	now := time.Now()
	b := budgetOf(ctx)
	if b == nil {
		return now.Add(s.timeout), now.Add(s.requestTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.startClock(now)
	until = b.waitUntil
	if until.IsZero() {
		until = b.begun.Add(s.workFor(b))
	}
	if !b.workUntil.IsZero() {
		until = minTime(until, b.workUntil)
	}
	return b.begun.Add(s.timeout), until
}

// answerBy is how long a failed call may wait for the outage probe's verdict: until the
// request's answer bound, DB_CONNECTION_TIMEOUT + its work deadline + 1 s from its start
// (docs/api/operations.md §9.1), and at least a little, so a request that used its bound up
// still learns whether the database is there.
func (s *Store) answerBy(ctx context.Context) time.Time {
	now := time.Now()
	by := now.Add(s.timeout)
	if b := budgetOf(ctx); b != nil {
		b.mu.Lock()
		if !b.begun.IsZero() {
			by = b.begun.Add(s.timeout + s.workFor(b) + 900*time.Millisecond)
		}
		b.mu.Unlock()
	}
	return maxTime(by, now.Add(50*time.Millisecond))
}

// WithWaitDeadline returns ctx with a fresh budget whose waits end at t: a database call
// made on behalf of requests that already waited (the coalesced push of several requests)
// keeps their waits' bound.
func WithWaitDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{waitUntil: t})
}

// workContext returns the context the statements of one call run on: ctx with the request's
// work deadline, started now if it was not yet (and never later than DB_CONNECTION_TIMEOUT +
// its work deadline after the request's clock started).
func (s *Store) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	b := budgetOf(ctx)
	if b == nil {
		return context.WithTimeout(ctx, s.requestTimeout)
	}
	b.mu.Lock()
	if b.workUntil.IsZero() {
		now := time.Now()
		b.startClock(now)
		d := s.workFor(b)
		b.workUntil = minTime(now.Add(d), b.begun.Add(s.timeout+d))
	}
	until := b.workUntil
	b.mu.Unlock()
	return context.WithDeadline(ctx, until)
}

// Mark records on the request ctx (given to Request) how err answered it when err came from
// a call made for several requests (a merged call) or from a wait in front of the database:
// ErrUnavailable counts for the outage summary, ErrBusy for the overload counter, like the
// failure of a call made on ctx itself.
func Mark(ctx context.Context, err error) {
	switch {
	case errors.Is(err, mq.ErrUnavailable):
		markUnavailable(ctx)
	case errors.Is(err, mq.ErrBusy):
		markBusy(ctx)
	}
}

// onBudget runs f on the request's budget under its lock; false when ctx carries none.
func onBudget(ctx context.Context, f func(b *budget) bool) bool {
	b := budgetOf(ctx)
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return f(b)
}

// markUnavailable records on the request's budget that the database failed it.
func markUnavailable(ctx context.Context) {
	onBudget(ctx, func(b *budget) bool { b.unavailable = true; return true })
}

// markBusy records on the request's budget that it was answered as load (ErrBusy).
func markBusy(ctx context.Context) {
	onBudget(ctx, func(b *budget) bool { b.busy = true; return true })
}

// Overloaded reports whether the request ctx (given to Request) was answered as load: a call
// or a wait of it passed a deadline while the database answered the probe
// (queen_overload_answers_total, docs/api/operations.md §9.7).
func Overloaded(ctx context.Context) bool {
	return onBudget(ctx, func(b *budget) bool { return b.busy })
}

// wasUnavailable reports whether a call of the request found the database unavailable.
func wasUnavailable(ctx context.Context) bool {
	return onBudget(ctx, func(b *budget) bool { return b.unavailable })
}

// errDeadline is the cause of a call the broker abandoned at its deadline.
var errDeadline = errors.New("database did not answer within the deadline")

// deadlineError turns err into ErrUnavailable when a deadline ended the call: the request's
// own, or one its caller set. A caller that was cancelled (a client that went away) gets its
// error back: that says nothing about the database.
func deadlineError(parent, work context.Context, err error) error {
	if err == nil || errors.Is(parent.Err(), context.Canceled) || !errors.Is(work.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w: %w", mq.ErrUnavailable, errDeadline, err)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
