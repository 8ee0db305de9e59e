// Package budget is the deadline budget of one request's database work (docs/api/operations.md
// §9.1, §9.7), carried on the request's context. The broker's queues (the push coalescer, the
// pop and consume gates, the mergers) and the store's pool and statements all draw on the same
// budget, so it lives here, below both, rather than in either: the wire layer starts one per
// request (Request), the broker marks how a merged call answered each request (Mark), and the
// store turns it into deadlines with its configured limits (Limits).
//
// Deadlines are kept on the broker's own clock: a PostgreSQL host that accepts TCP and never
// answers enforces no statement_timeout and sends no error, so only the broker can end a call.
//
// A request's clock starts lazily, the first time it waits in front of the database or sends a
// statement, so that reading a slow body or parking a pop costs nothing. From then on:
//
//   - its waits are load, not an outage: together they may last until Limits.Request
//     (Limits.Bulk on the bulk routes) from that start. A wait for a pooled connection that
//     reaches Limits.Connection asks the outage probe whether the database is there, and an
//     outage ends every wait at once;
//   - its statements share Limits.Request from the first of them, ending no later than
//     Limits.Connection + Limits.Request from the start, so a request answers within that plus
//     the second the probe may take, whatever mix of waits and calls it makes.
package budget

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// budget is the deadline state of one request's database work.
type budget struct {
	mu        sync.Mutex
	begun     time.Time     // zero until the request first waits or sends a statement
	waitUntil time.Time     // when set, the end of its waits instead (a merged call's)
	workUntil time.Time     // zero until its first statement
	bulk      bool          // the work deadline is Limits.Bulk
	workFor   time.Duration // when set, the work deadline instead (migrations)
	// unavailable is set when a call of the request failed because the database was
	// unavailable: the request then answers 503 (500 on the transaction route), which the
	// outage tracker counts once the request is done. busy is set when it was answered as
	// load instead (ErrBusy), which the overload counter counts.
	unavailable, busy bool
}

type key struct{}

func of(ctx context.Context) *budget {
	b, _ := ctx.Value(key{}).(*budget)
	return b
}

// Request returns ctx carrying a fresh budget for one request (or one attempt of a long-poll
// pop): its waits and statements share Limits.Request. A call on a context without a budget
// gets one of its own.
func Request(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, &budget{})
}

// Ensure returns ctx with a budget, adding one when it has none, so that several calls
// (creating partitions, then pushing; a pop's gate and its statement) share one deadline even
// when the caller set none.
func Ensure(ctx context.Context) context.Context {
	if of(ctx) != nil {
		return ctx
	}
	return Request(ctx)
}

// Bulk returns ctx whose database work is bounded by Limits.Bulk (DB_STATEMENT_TIMEOUT) instead
// of Limits.Request: the bulk admin routes (queue deletion, stats refresh). The time already
// spent by the request still counts.
func Bulk(ctx context.Context) context.Context {
	nb := &budget{bulk: true}
	if b := of(ctx); b != nil {
		b.mu.Lock()
		nb.begun = b.begun
		b.mu.Unlock()
	}
	return context.WithValue(ctx, key{}, nb)
}

// IsBulk reports whether ctx's budget is bounded by Limits.Bulk (it was given to Bulk): a job
// that a bulk route runs (stats refresh) ends its statements with the route's work deadline.
func IsBulk(ctx context.Context) bool {
	return on(ctx, func(b *budget) bool { return b.bulk })
}

// WorkFor returns ctx with a fresh budget whose work deadline is d, whatever the limits:
// migrations, which may take longer than any request.
func WorkFor(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, key{}, &budget{workFor: d})
}

// WithWaitDeadline returns ctx with a fresh budget whose waits end at t: a database call made
// on behalf of requests that already waited (the coalesced push of several requests) keeps
// their waits' bound.
func WithWaitDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, key{}, &budget{waitUntil: t})
}

// Limits are the configured bounds a budget is measured against.
type Limits struct {
	Connection time.Duration // DB_CONNECTION_TIMEOUT: a pool wait this long asks the outage probe
	Request    time.Duration // DB_REQUEST_TIMEOUT: one request's waits, and its statements
	Bulk       time.Duration // DB_STATEMENT_TIMEOUT: the same on the bulk routes
}

// work is the work deadline of b; b.mu is held.
func (l Limits) work(b *budget) time.Duration {
	switch {
	case b.workFor > 0:
		return b.workFor
	case b.bulk:
		return l.Bulk
	}
	return l.Request
}

// startClock starts b's clock now unless it runs; b.mu is held.
func (b *budget) startClock(now time.Time) {
	if b.begun.IsZero() {
		b.begun = now
	}
}

// WaitDeadline is when the request's waits in front of the database must end: Limits.Request
// after its clock started (a merged call's: the earliest of its requests'), or sooner when its
// work deadline is nearer. The broker's queues use it, so waiting in them counts against the
// same budget as the pool.
func (l Limits) WaitDeadline(ctx context.Context) time.Time {
	_, until := l.WaitBounds(ctx)
	return until
}

// WaitBounds starts the request's clock unless it runs and returns when a wait for a pooled
// connection asks the outage probe whether the database is there (Limits.Connection after the
// start) and when every wait must end (WaitDeadline).
func (l Limits) WaitBounds(ctx context.Context) (probeAt, until time.Time) {
	now := time.Now()
	b := of(ctx)
	if b == nil {
		return now.Add(l.Connection), now.Add(l.Request)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.startClock(now)
	until = b.waitUntil
	if until.IsZero() {
		until = b.begun.Add(l.work(b))
	}
	if !b.workUntil.IsZero() {
		until = minTime(until, b.workUntil)
	}
	return b.begun.Add(l.Connection), until
}

// AnswerBy is how long a failed call may wait for the outage probe's verdict: until the
// request's answer bound, Limits.Connection + its work deadline + 1 s from its start
// (docs/api/operations.md §9.1), and at least a little, so a request that used its bound up
// still learns whether the database is there.
func (l Limits) AnswerBy(ctx context.Context) time.Time {
	now := time.Now()
	by := now.Add(l.Connection)
	if b := of(ctx); b != nil {
		b.mu.Lock()
		if !b.begun.IsZero() {
			by = b.begun.Add(l.Connection + l.work(b) + 900*time.Millisecond)
		}
		b.mu.Unlock()
	}
	return maxTime(by, now.Add(50*time.Millisecond))
}

// Work returns the context the statements of one call run on: ctx with the request's work
// deadline, started now if it was not yet (and never later than Limits.Connection + its work
// deadline after the request's clock started).
func (l Limits) Work(ctx context.Context) (context.Context, context.CancelFunc) {
	b := of(ctx)
	if b == nil {
		return context.WithTimeout(ctx, l.Request)
	}
	b.mu.Lock()
	if b.workUntil.IsZero() {
		now := time.Now()
		b.startClock(now)
		d := l.work(b)
		b.workUntil = minTime(now.Add(d), b.begun.Add(l.Connection+d))
	}
	until := b.workUntil
	b.mu.Unlock()
	return context.WithDeadline(ctx, until)
}

// Mark records on the request ctx (given to Request) how err answered it when err came from a
// call made for several requests (a merged call) or from a wait in front of the database:
// mq.ErrUnavailable counts for the outage summary, mq.ErrBusy for the overload counter, like
// the failure of a call made on ctx itself.
func Mark(ctx context.Context, err error) {
	switch {
	case errors.Is(err, mq.ErrUnavailable):
		MarkUnavailable(ctx)
	case errors.Is(err, mq.ErrBusy):
		MarkBusy(ctx)
	}
}

// on runs f on the request's budget under its lock; false when ctx carries none.
func on(ctx context.Context, f func(b *budget) bool) bool {
	b := of(ctx)
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return f(b)
}

// MarkUnavailable records on the request's budget that the database failed it.
func MarkUnavailable(ctx context.Context) {
	on(ctx, func(b *budget) bool { b.unavailable = true; return true })
}

// MarkBusy records on the request's budget that it was answered as load (mq.ErrBusy).
func MarkBusy(ctx context.Context) {
	on(ctx, func(b *budget) bool { b.busy = true; return true })
}

// Overloaded reports whether the request ctx (given to Request) was answered as load: a call or
// a wait of it passed a deadline while the database answered the probe
// (queen_overload_answers_total, docs/api/operations.md §9.7).
func Overloaded(ctx context.Context) bool {
	return on(ctx, func(b *budget) bool { return b.busy })
}

// Unavailable reports whether a call of the request found the database unavailable.
func Unavailable(ctx context.Context) bool {
	return on(ctx, func(b *budget) bool { return b.unavailable })
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
