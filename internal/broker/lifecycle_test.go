package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
)

// startPart starts a lifecycle part for the test and stops it when the test ends.
func startPart(tb testing.TB, p lifecycle.Service) {
	tb.Helper()
	if err := p.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
}

// A coalescer refuses requests before Start and after Stop; Stop writes what it accepted.
func TestCoalescerServesOnlyWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &recordingWriter{gate: make(chan struct{})}
		c := &coalescer{write: w.write, maxItems: 1000, maxInflight: 2, timeout: time.Second}
		if _, err := c.submit(context.Background(), items("early")); !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("submit before Start: %v, want ErrUnavailable", err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		submit := func(r int) { wg.Go(func() { _, errs[r] = c.submit(context.Background(), items("k")) }) }
		submit(0)
		synctest.Wait() // taken into a call, which blocks on the gate
		for r := 1; r < len(errs); r++ {
			submit(r)
		}
		synctest.Wait()
		// The others queue behind that call (its lane is busy; the other flusher takes
		// nothing of it): had Stop nothing queued to write, the test would prove nothing.
		if n := c.queued(); n != 3 {
			t.Fatalf("%d requests queued behind the held call, want 3", n)
		}
		stopped := make(chan struct{})
		go func() { c.Stop(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned while a call was still in flight")
		default:
		}
		close(w.gate) // let the write in flight finish; Stop must still write the queued ones
		<-stopped
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Errorf("request %d accepted before Stop failed: %v", r, err)
			}
		}
		if got := len(w.keys); got < 2 {
			t.Fatalf("%d calls written, want the held one and the queued requests after it", got)
		}
		if _, err := c.submit(context.Background(), items("late")); !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("submit after Stop: %v, want ErrUnavailable", err)
		}
	})
}

// Signals pending when the signaler stops are still sent.
func TestSignalerSendsPendingSignalsAtStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		block := make(chan struct{})
		s := &signaler{timeout: time.Second, kick: make(chan struct{}, 1),
			notify: func(_ context.Context, queues []string) error {
				<-block
				mu.Lock()
				sent = append(sent, queues...)
				mu.Unlock()
				return nil
			}}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.add("a")
		synctest.Wait() // the sender takes "a" and blocks in notify
		s.add("b", "c")
		stopped := make(chan struct{})
		go func() { s.Stop(); close(stopped) }()
		synctest.Wait() // Stop waits for the sender, which is still in notify
		close(block)
		<-stopped
		slices.Sort(sent)
		if !slices.Equal(sent, []string{"a", "b", "c"}) {
			t.Fatalf("sent %v, want a, b and c", sent)
		}
	})
}

// Signals that arrive within the gap after a notifying transaction go out together in the next
// one, when the gap ends; what is pending at Stop goes out without waiting for it.
func TestSignalerSendsWhatArrivesWithinTheGapInOneStatement(t *testing.T) {
	calls := make(chan []string, 10)
	tick := make(chan time.Time)
	s := &signaler{timeout: time.Second, kick: make(chan struct{}, 1), gap: time.Hour,
		afterFunc: func(time.Duration) <-chan time.Time { return tick },
		notify: func(_ context.Context, queues []string) error {
			slices.Sort(queues)
			calls <- queues
			return nil
		}}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := func() []string {
		t.Helper()
		select {
		case q := <-calls:
			return q
		case <-time.After(time.Minute):
			t.Fatal("no notification within a minute")
			return nil
		}
	}
	s.add("a")
	if q := next(); !slices.Equal(q, []string{"a"}) {
		t.Fatalf("first notification %v, want [a]", q)
	}
	// The sender now waits for the gap: b and c arrive within it.
	s.add("b")
	s.add("c")
	select {
	case tick <- time.Now(): // the gap ends
	case <-time.After(time.Minute):
		t.Fatal("the sender is not waiting for the gap")
	}
	if q := next(); !slices.Equal(q, []string{"b", "c"}) {
		t.Fatalf("second notification %v, want [b c] in one statement", q)
	}
	s.add("d") // within the next gap, which never ends here: Stop sends it
	s.Stop()
	if q := next(); !slices.Equal(q, []string{"d"}) {
		t.Fatalf("at Stop %v, want [d]", q)
	}
	if len(calls) != 0 {
		t.Fatalf("more notifications: %v", <-calls)
	}
}

// The gate keeps a key's slot only while a pop of that key is inside or waiting, whether the
// pops left, gave up on their context, or were turned away by Stop.
func TestPopGateForgetsKeysOfFinishedPops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &callGate{size: 2}
		startPart(t, g)
		var wg sync.WaitGroup
		var gaveUp, entered atomic.Int32
		for i := range 50 {
			wg.Go(func() {
				key := []string{"q1\x00g", "q2\x00g", "q3\x00other"}[i%3]
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
				defer cancel()
				leave, err := g.enter(ctx, key)
				if err != nil {
					gaveUp.Add(1)
					return // gave up waiting: must leave nothing behind either
				}
				entered.Add(1)
				time.Sleep(2 * time.Millisecond) // the bubble's clock: inside a while, as a pop is
				leave()
			})
		}
		wg.Wait()
		if gaveUp.Load() == 0 || entered.Load() == 0 {
			t.Fatalf("%d pops entered and %d gave up: the test needs both", entered.Load(), gaveUp.Load())
		}
		if n := gateKeys(g); n != 0 {
			t.Fatalf("%d keys left in the gate after every pop finished", n)
		}

		// Pops waiting when the gate stops are turned away, and leave nothing behind.
		leave1, _ := g.enter(context.Background(), "full")
		leave2, _ := g.enter(context.Background(), "full")
		waited := make(chan error)
		go func() { _, err := g.enter(context.Background(), "full"); waited <- err }()
		synctest.Wait()
		if n := gateUsers(g, "full"); n != 3 {
			t.Fatalf("%d users of the full key, want 2 inside and 1 waiting", n)
		}
		go g.Stop()
		if err := <-waited; !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("waiting pop at Stop: %v, want ErrUnavailable", err)
		}
		leave1()
		leave2()
		if n := gateKeys(g); n != 0 {
			t.Fatalf("%d keys left after Stop", n)
		}
		if _, err := g.enter(context.Background(), "after"); !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("enter after Stop: %v, want ErrUnavailable", err)
		}
	})
}

func gateKeys(g *callGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.slots)
}

func gateUsers(g *callGate, key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.slots[key]; s != nil {
		return s.users
	}
	return 0
}
