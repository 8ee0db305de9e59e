package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
)

// popGate bounds the pop attempts of one (target, group) that run in the database at once.
// Pops of one group compete for the same few partitions: beyond a handful of concurrent
// attempts, the extra ones only collide on the same rows (skipped locks, lock-manager and
// buffer contention) and slow the winners down. Waiting in Go costs nothing by comparison.
//
// A key's slot lives only while a pop of that key is inside or waiting: keys come from
// clients (queue, partition, group names), so a map that kept them all would grow with every
// name ever popped. The gate starts no goroutine; it is a lifecycle part so that a stopped
// broker admits no further attempt and the pops waiting for a slot give up at once.
type popGate struct {
	lifecycle.StartStop
	size  int
	mu    sync.Mutex
	slots map[string]*gateSlot
	done  <-chan struct{} // closed when Stop begins; nil before Start
}

// gateSlot is one key's semaphore and the pops holding or waiting for it.
type gateSlot struct {
	ch    chan struct{}
	users int
}

// Start opens the gate until Stop.
func (g *popGate) Start(ctx context.Context) error {
	return g.StartWith(ctx, func(ctx context.Context) error {
		g.mu.Lock()
		g.done = ctx.Done()
		g.mu.Unlock()
		return nil
	})
}

// errGateTimeout answers a pop attempt that waited for a slot past its wait deadline.
var errGateTimeout = fmt.Errorf("%w: pop waited for the database longer than DB_CONNECTION_TIMEOUT", mq.ErrUnavailable)

// enter takes a slot for key, waiting for one while ctx lasts; leave gives it back. It returns
// errStopped when the gate is not running.
func (g *popGate) enter(ctx context.Context, key string) (leave func(), err error) {
	return g.enterUntil(ctx, key, time.Time{})
}

// enterUntil is enter waiting at most until until (unless zero): the request's wait deadline,
// since waiting here counts against DB_CONNECTION_TIMEOUT like waiting for a pooled connection
// (docs/api/operations.md §9.1). It returns errGateTimeout at until.
func (g *popGate) enterUntil(ctx context.Context, key string, until time.Time) (leave func(), err error) {
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
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = errStopped
	}
	g.release(key, s)
	return nil, err
}

// release forgets a pop that left or gave up, and the key's slot with the last of them.
func (g *popGate) release(key string, s *gateSlot) {
	g.mu.Lock()
	s.users--
	if s.users == 0 {
		delete(g.slots, key)
	}
	g.mu.Unlock()
}
