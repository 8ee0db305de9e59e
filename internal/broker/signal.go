package broker

import (
	"context"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/waiter"
)

// signaler tells other broker instances that queues may have work, through PostgreSQL NOTIFY
// sent after the writes committed, from its own short transactions.
//
// Why not NOTIFY inside the writing transaction: PostgreSQL serialises the commits of all
// transactions that notified (they take one lock on the notification queue until their commit
// is flushed), which takes group commit away from every concurrent push and ack. Here the hot
// paths only add a queue name to a set; one flush at a time sends every pending name in one
// statement, so a burst of commits costs one notifying transaction, and an idle signal goes
// out at once. A write committed but not yet signalled when the process dies is found by the
// other instances' fallback polls (at most 1 s), as any lost signal is (operations.md §3).
type signaler struct {
	notify  func(ctx context.Context, queues []string) error
	timeout time.Duration

	mu      sync.Mutex
	pending map[string]struct{}
	busy    bool
}

// add schedules a signal for each queue.
func (s *signaler) add(queues ...string) {
	if len(queues) == 0 {
		return
	}
	s.mu.Lock()
	if s.pending == nil {
		s.pending = make(map[string]struct{})
	}
	for _, q := range queues {
		s.pending[q] = struct{}{}
	}
	start := !s.busy
	s.busy = true
	s.mu.Unlock()
	if start {
		go s.flushLoop()
	}
}

func (s *signaler) flushLoop() {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.busy = false
			s.mu.Unlock()
			return
		}
		queues := make([]string, 0, len(s.pending))
		for q := range s.pending {
			queues = append(queues, q)
		}
		clear(s.pending)
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		// A failed signal is not retried: peers find the work by their fallback polls.
		_ = s.notify(ctx, queues)
		cancel()
	}
}

// wake wakes this instance's parked pops of the queues at once and signals the other
// instances after the fact.
func (b *Broker) wake(queues ...string) {
	for _, q := range queues {
		b.hub.Wake(waiter.Signal{Queue: q})
	}
	b.signals.add(queues...)
}
