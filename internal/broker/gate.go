package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
)

// callGate bounds the database calls of one key that run at once; waiting in Go costs
// nothing next to a call that runs in PostgreSQL only to contend with the others. The broker
// has two: the pop gate, keyed by (target, group), since pops of one group compete for the
// same few partitions and, beyond a handful of concurrent attempts, the extra ones only
// collide on the same rows (skipped locks, lock-manager and buffer contention) and slow the
// winners down; and the consume gate, one key for all pops, acks and transactions, since
// more of them in PostgreSQL at once than its cores can run only adds context switches and
// lock waits (bench/HISTORY.md, the consume gate's runs of 2026-12-02).
//
// A key's slot lives only while a call of that key is inside or waiting: keys come from
// clients (queue, partition, group names), so a map that kept them all would grow with every
// name ever popped. The gate starts no goroutine; it is a lifecycle part so that a stopped
// broker admits no further call and the calls waiting for a slot give up at once.
type callGate struct {
	lifecycle.StartStop
	size int
	// outage returns a channel closed when a database outage begins (store.OutageBegun): a
	// wait for a slot ends at once then. Nil: waits end only at their deadline.
	outage func() <-chan struct{}
	mu     sync.Mutex
	slots  map[string]*gateSlot
	done   <-chan struct{} // closed when Stop begins; nil before Start
}

// gateSlot is one key's semaphore and the calls holding or waiting for it.
type gateSlot struct {
	ch    chan struct{}
	users int
}

// Start opens the gate until Stop.
func (g *callGate) Start(ctx context.Context) error {
	return g.StartWith(ctx, func(ctx context.Context) error {
		g.mu.Lock()
		g.done = ctx.Done()
		g.mu.Unlock()
		return nil
	})
}

// errGateTimeout answers a call that waited for a slot past its wait deadline. Such a wait is
// load, or an outage the probe has not found yet: the broker asks the store (store.Judge),
// which answers ErrBusy or ErrUnavailable (docs/api/operations.md §9.7).
var errGateTimeout = fmt.Errorf("%w: waited for the database until DB_REQUEST_TIMEOUT", mq.ErrUnavailable)

// errOutageWait answers a request that was waiting in front of the database (for a gate slot,
// or in the push coalescer) when a database outage began.
var errOutageWait = fmt.Errorf("%w: an outage began while the call waited", mq.ErrUnavailable)

// enter takes a slot for key, waiting for one while ctx lasts; leave gives it back. It returns
// errStopped when the gate is not running.
func (g *callGate) enter(ctx context.Context, key string) (leave func(), err error) {
	return g.enterUntil(ctx, key, time.Time{})
}

// enterUntil is enter waiting at most until until (unless zero): the request's wait deadline,
// since waiting here counts like waiting for a pooled connection (docs/api/operations.md §9.1,
// §9.7). It returns errGateTimeout at until, and errOutageWait when an outage begins.
func (g *callGate) enterUntil(ctx context.Context, key string, until time.Time) (leave func(), err error) {
	return g.enterOr(ctx, key, until, nil)
}

// errAborted answers a wait for a slot that its abort channel ended: a merged call took the
// request (merge.go), which no longer needs a slot of its own.
var errAborted = errors.New("the request was taken by a merged call")

// enterOr is enterUntil that also gives up, with errAborted, when abort is closed (nil: never).
func (g *callGate) enterOr(ctx context.Context, key string, until time.Time, abort <-chan struct{}) (leave func(), err error) {
	g.mu.Lock()
	done := g.done
	if done == nil || !g.Running() {
		g.mu.Unlock()
		return nil, errStopped
	}
	if g.slots == nil {
		g.slots = make(map[string]*gateSlot)
	}
	s, ok := g.slots[key]
	if !ok {
		s = &gateSlot{ch: make(chan struct{}, g.size)}
		g.slots[key] = s
	}
	s.users++
	g.mu.Unlock()
	select {
	case s.ch <- struct{}{}: // a free slot needs no timer
		return func() { <-s.ch; g.release(key, s) }, nil
	default:
	}
	var expired <-chan time.Time // nil: no bound
	var outage <-chan struct{}
	if g.outage != nil {
		outage = g.outage()
	}
	if !until.IsZero() {
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; g.release(key, s) }, nil
	case <-expired:
		err = errGateTimeout
	case <-outage:
		err = errOutageWait
	case <-ctx.Done():
		err = ctx.Err()
	case <-abort:
		err = errAborted
	case <-done:
		err = errStopped
	}
	g.release(key, s)
	return nil, err
}

// release forgets a call that left or gave up, and the key's slot with the last of them.
func (g *callGate) release(key string, s *gateSlot) {
	g.mu.Lock()
	s.users--
	if s.users == 0 {
		delete(g.slots, key)
	}
	g.mu.Unlock()
}
