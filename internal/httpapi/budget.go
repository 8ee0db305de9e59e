package httpapi

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// bodyBudget bounds the bytes of request bodies held in memory at once
// (QUEEN_MAX_INFLIGHT_BODY_BYTES, docs/api/operations.md §9.2). Without it, a few hundred
// clients each uploading a large body could take the broker's whole memory before any of
// them is processed. It is a weighted semaphore whose waits are bounded: a body that finds no
// room within its wait is refused (503) instead of queueing for ever.
//
// An acquire that fits is granted at once, even with others waiting, and a release serves
// the waiters that now fit, oldest first. Strict arrival order would deadlock: a body waiting
// for a large step would block the small last step of a body that already holds most of the
// room and would release it all a moment later. A large body may thus wait while smaller ones
// pass; its wait is bounded, and a 503 for the largest bodies is the policy anyway.
type bodyBudget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiters  list.List // of *budgetWaiter, oldest first
}

// budgetWaiter is one acquire waiting for room; ready is closed once its bytes are granted.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// newBodyBudget returns a budget of capacity bytes.
func newBodyBudget(capacity int64) *bodyBudget {
	return &bodyBudget{capacity: capacity}
}

// acquire takes n bytes, waiting at most wait for them (and no longer than ctx lives). It
// reports whether the bytes were granted; if so the caller owes a release of n.
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	if n <= 0 {
		return true
	}
	b.mu.Lock()
	if b.used+n <= b.capacity {
		b.used += n
		b.mu.Unlock()
		return true
	}
	if n > b.capacity || wait <= 0 {
		// It can never fit, or the caller will not wait: say so now.
		b.mu.Unlock()
		return false
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while the wait was ending: the bytes are ours, keep them.
		return true
	default:
	}
	b.waiters.Remove(elem)
	return false
}

// release returns n bytes taken by acquire and wakes the waiters that now fit.
func (b *bodyBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic("httpapi: bodyBudget released more than was acquired")
	}
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked hands room to the waiters that fit, oldest first.
func (b *bodyBudget) grantLocked() {
	for e := b.waiters.Front(); e != nil && b.used < b.capacity; {
		next := e.Next()
		if w := e.Value.(*budgetWaiter); b.used+w.n <= b.capacity {
			b.used += w.n
			b.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
}

// inUse is the number of bytes currently granted (tests and diagnostics).
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
