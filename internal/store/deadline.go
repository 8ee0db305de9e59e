package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Database deadlines (docs/api/operations.md §9.1) are kept on the broker's own clock: a
// PostgreSQL host that accepts TCP and never answers enforces no statement_timeout and sends
// no error, so only the broker can end a call.
//
// A request has two clocks, both started lazily, so that reading a slow body or parking a pop
// costs nothing:
//
//   - the wait clock starts the first time the request waits in front of the database (the
//     push coalescer, the pop gate, the pool) and allows connTimeout in total for all of them;
//   - the work clock starts when its first statement is sent and allows requestTimeout
//     (bulkTimeout on the bulk admin routes) for all its statements together.
//
// A wait after the work clock started (a second call of the same request) is bounded by
// what is left of the work clock, so a request answers within connTimeout + its work
// deadline, whatever mix of waits and calls it makes.

// budget is the deadline state of one request's database work.
type budget struct {
	mu        sync.Mutex
	waitUntil time.Time     // zero until the request first waits
	workUntil time.Time     // zero until its first statement
	bulk      bool          // the work deadline is bulkTimeout
	workFor   time.Duration // when set, the work deadline instead (migrations)
	// unavailable is set when a call of the request failed because the database was
	// unavailable: the request then answers 503 (500 on the transaction route), which the
	// outage tracker counts once the request is done.
	unavailable bool
}

type budgetKey struct{}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// Request returns ctx carrying a fresh deadline budget for one request (or one attempt of a
// long-poll pop): its waits and statements share DB_CONNECTION_TIMEOUT and DB_REQUEST_TIMEOUT.
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
// The wait already spent by the request still counts.
func Bulk(ctx context.Context) context.Context {
	nb := &budget{bulk: true}
	if b := budgetOf(ctx); b != nil {
		b.mu.Lock()
		nb.waitUntil = b.waitUntil
		b.mu.Unlock()
	}
	return context.WithValue(ctx, budgetKey{}, nb)
}

// WaitDeadline is when the request's waits in front of the database must end: DB_CONNECTION_TIMEOUT
// after it first waited, or sooner when its work deadline is nearer. The broker's queues (push
// coalescer, pop gate) use it, so waiting in them counts against the same budget as the pool.
func (s *Store) WaitDeadline(ctx context.Context) time.Time {
	now := time.Now()
	b := budgetOf(ctx)
	if b == nil {
		return now.Add(s.timeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.workUntil.IsZero() {
		return minTime(now.Add(s.timeout), b.workUntil)
	}
	if b.waitUntil.IsZero() {
		b.waitUntil = now.Add(s.timeout)
	}
	return b.waitUntil
}

// WithWaitDeadline returns ctx with a fresh budget whose wait clock ends at t: a database call
// made on behalf of requests that already waited (the coalesced push of several requests)
// keeps their waits' bound.
func WithWaitDeadline(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{waitUntil: t})
}

// workContext returns the context the statements of one call run on: ctx with the request's
// work deadline, started now if it was not yet.
func (s *Store) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	b := budgetOf(ctx)
	if b == nil {
		return context.WithTimeout(ctx, s.requestTimeout)
	}
	b.mu.Lock()
	if b.workUntil.IsZero() {
		d := s.requestTimeout
		if b.bulk {
			d = s.bulkTimeout
		}
		if b.workFor > 0 {
			d = b.workFor
		}
		b.workUntil = time.Now().Add(d)
	}
	until := b.workUntil
	b.mu.Unlock()
	return context.WithDeadline(ctx, until)
}

// MarkUnavailable records that the request ctx (given to Request) was answered as
// unavailable by a wait in front of the database (the broker's push coalescer, pop gate or consume gate),
// so the outage summary counts it like a request a database call failed.
func MarkUnavailable(ctx context.Context) { markUnavailable(ctx) }

// markUnavailable records on the request's budget that the database failed it.
func markUnavailable(ctx context.Context) {
	if b := budgetOf(ctx); b != nil {
		b.mu.Lock()
		b.unavailable = true
		b.mu.Unlock()
	}
}

// wasUnavailable reports whether a call of the request found the database unavailable.
func wasUnavailable(ctx context.Context) bool {
	b := budgetOf(ctx)
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.unavailable
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

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
