package broker

import (
	"context"
	"sync"
)

// popGate bounds the pop attempts of one (target, group) that run in the database at once.
// Pops of one group compete for the same few partitions: beyond a handful of concurrent
// attempts, the extra ones only collide on the same rows (skipped locks, lock-manager and
// buffer contention) and slow the winners down. Waiting in Go costs nothing by comparison.
type popGate struct {
	size  int
	mu    sync.Mutex
	slots map[string]chan struct{}
}

// enter takes a slot for key, waiting for one while ctx lasts; leave gives it back.
func (g *popGate) enter(ctx context.Context, key string) (leave func(), err error) {
	g.mu.Lock()
	if g.slots == nil {
		g.slots = make(map[string]chan struct{})
	}
	ch, ok := g.slots[key]
	if !ok {
		ch = make(chan struct{}, g.size)
		g.slots[key] = ch
	}
	g.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
