package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// Database deadlines (docs/api/operations.md §9.1, §9.7) are kept on the broker's own clock by
// the request's budget (internal/budget), measured against the store's configured limits: a
// PostgreSQL host that accepts TCP and never answers enforces no statement_timeout and sends
// no error, so only the broker can end a call. A wait for a pooled connection that reaches
// DB_CONNECTION_TIMEOUT asks the outage probe (outage.go) whether the database is there.

// limits are the bounds the store measures budgets against: DB_CONNECTION_TIMEOUT,
// DB_REQUEST_TIMEOUT and DB_STATEMENT_TIMEOUT.
func (s *Store) limits() budget.Limits {
	return budget.Limits{Connection: s.timeout, Request: s.requestTimeout, Bulk: s.bulkTimeout}
}

// WaitDeadline is when the request's waits in front of the database must end, with the store's
// limits (budget.Limits.WaitDeadline). The broker's queues (push coalescer, pop and consume
// gates) use it, so waiting in them counts against the same budget as the pool.
func (s *Store) WaitDeadline(ctx context.Context) time.Time {
	return s.limits().WaitDeadline(ctx)
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
