package broker

import (
	"context"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/tenant"
	"github.com/queen-go/queen/internal/waiter"
)

// signaler tells other broker instances that queues may have work, through PostgreSQL NOTIFY
// sent after the writes committed, from its own short transactions, at most one per gap.
//
// Why not NOTIFY inside the writing transaction: PostgreSQL serialises the commits of all
// transactions that notified (they take one lock on the notification queue until their commit
// is flushed), which takes group commit away from every concurrent push and ack. Here the hot
// paths only add a queue name to a set; one flush at a time sends every pending name in one
// statement, so a burst of commits costs one notifying transaction, and an idle signal goes
// out at once. A write committed but not yet signalled when the process dies is found by the
// other instances' fallback polls (at most 1 s), as any lost signal is (docs/api/operations.md §3).
//
// One sender goroutine runs from Start to Stop, woken by a kick; at Stop it sends what is
// pending once more, so the signals of the last writes still go out. Queues added while the
// signaler is not running wait for its next run (there is none after Stop): peers find their
// work by polling.
type signaler struct {
	lifecycle.StartStop
	notify  func(ctx context.Context, queues []string) error
	timeout time.Duration
	// gap is the least time between two notifying transactions: signals that arrive meanwhile
	// wait and go out together (0: none).
	gap       time.Duration
	afterFunc func(time.Duration) <-chan time.Time // nil: time.After (tests hold the gap open)
	kick      chan struct{}                        // (at most one buffered) wake-up of the sender

	mu      sync.Mutex
	pending map[string]struct{}
}

// Start runs the sender until Stop.
func (s *signaler) Start(ctx context.Context) error {
	return s.StartWith(ctx, func(context.Context) error {
		s.Go(s.sender)
		return nil
	})
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
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// sender sends the pending signals whenever kicked, and once more when ctx ends. After each
// notifying transaction it waits the gap; what was added meanwhile goes out in the next one.
func (s *signaler) sender(ctx context.Context) {
	for {
		select {
		case <-s.kick:
		case <-ctx.Done():
			s.flush()
			return
		}
		for s.sendPending() {
			if s.gap <= 0 {
				continue
			}
			select {
			case <-s.after(s.gap):
			case <-ctx.Done():
				s.flush()
				return
			}
		}
	}
}

// after is time.After, or the test's clock.
func (s *signaler) after(d time.Duration) <-chan time.Time {
	if s.afterFunc != nil {
		return s.afterFunc(d)
	}
	return time.After(d)
}

// flush sends every pending queue, without waiting the gap (at Stop).
func (s *signaler) flush() {
	for s.sendPending() {
	}
}

// sendPending sends the pending queues in one statement; false when none was pending.
func (s *signaler) sendPending() bool {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return false
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
	return true
}

// wake wakes this instance's parked pops of the queues at once and signals the other
// instances after the fact.
// The queues are of ctx's tenant; the signaler's set holds their tenant.Key.
func (b *Broker) wake(ctx context.Context, queues ...string) {
	t, _ := tenant.Of(ctx)
	for _, q := range queues {
		b.hub.Wake(waiter.Signal{Tenant: t, Queue: q})
		b.signals.add(tenant.Key(t, q))
	}
}

// signalGap is the broker's signaler gap: at most one notifying transaction per 20 ms, so a
// stream of acks that each free a partition (one signal per ack when pops take one message)
// costs PostgreSQL at most 50 extra transactions a second instead of one per ack or two. The
// other instances' parked pops learn of the work up to 20 ms later; this instance's are woken
// at once, without the database.
const signalGap = 20 * time.Millisecond
