package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/testkit"
)

// ticker is a minimal part: one goroutine counting until stopped.
type ticker struct {
	lifecycle.StartStop
	ticks, exited atomic.Int32
}

func (p *ticker) Start(ctx context.Context) error {
	return p.StartWith(ctx, func(context.Context) error {
		p.Go(func(ctx context.Context) {
			defer p.exited.Add(1)
			for ctx.Err() == nil {
				p.ticks.Add(1)
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
			}
		})
		return nil
	})
}

var _ lifecycle.Service = (*ticker)(nil)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	p := &ticker{}
	started, stopped := p.Started(), p.Stopped() // may be taken before Start
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed(started) || closed(stopped) || !p.Running() {
		t.Fatal("after Start: want started, running, not stopped")
	}
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if n := p.ticks.Load(); n < 3 {
			return fmt.Errorf("%d ticks, want 3", n)
		}
		return nil
	})
	p.Stop()
	if !closed(stopped) || p.Running() || p.exited.Load() != 1 {
		t.Fatalf("after Stop: stopped=%v running=%v exited=%d", closed(stopped), p.Running(), p.exited.Load())
	}
	if p.Go(func(context.Context) { t.Error("ran after Stop") }) {
		t.Fatal("Go accepted work after Stop")
	}
	if err := p.Start(context.Background()); !errors.Is(err, lifecycle.ErrStopped) {
		t.Fatalf("Start after Stop: %v, want ErrStopped", err)
	}
}

func TestDoubleAndConcurrentStop(t *testing.T) {
	t.Parallel()
	p := &ticker{}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("second Start while running: %v", err)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			p.Stop()
			if p.exited.Load() != 1 {
				t.Error("a Stop returned before the goroutine ended")
			}
		})
	}
	wg.Wait()
	p.Stop()
	if p.exited.Load() != 1 {
		t.Fatalf("goroutine exited %d times", p.exited.Load())
	}
}

func TestStopBeforeStartIsANoOp(t *testing.T) {
	t.Parallel()
	p := &ticker{}
	p.Stop()
	if closed(p.Stopped()) {
		t.Fatal("Stop before Start closed Stopped")
	}
	if p.Go(func(context.Context) {}) {
		t.Fatal("Go ran before Start")
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start after an early Stop: %v", err)
	}
	p.Stop()
	if p.exited.Load() != 1 {
		t.Fatal("the run did not end")
	}
}

// Stop waits for every goroutine of the run, including ones started after Start returned,
// and cancels their context with ErrStopped as the cause.
func TestStopWaitsForOwnedGoroutines(t *testing.T) {
	t.Parallel()
	var s lifecycle.StartStop
	if err := s.StartWith(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var done atomic.Int32
	release := make(chan struct{})
	for range 10 {
		if !s.Go(func(ctx context.Context) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), lifecycle.ErrStopped) {
				t.Errorf("cause %v, want ErrStopped", context.Cause(ctx))
			}
			<-release // still busy after the cancellation: Stop must wait
			done.Add(1)
		}) {
			t.Fatal("Go refused while running")
		}
	}
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while goroutines were running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-stopped
	if done.Load() != 10 {
		t.Fatalf("%d goroutines done when Stop returned, want 10", done.Load())
	}
}

// Only Stop ends a run: the context given to Start lends its values, not its end.
func TestStartContextDoesNotEndTheRun(t *testing.T) {
	t.Parallel()
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var s lifecycle.StartStop
	var got any
	if err := s.StartWith(ctx, func(ctx context.Context) error { got = ctx.Value(key{}); return nil }); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	s.Go(func(ctx context.Context) { <-ctx.Done(); close(ended) })
	cancel()
	select {
	case <-ended:
		t.Fatal("cancelling Start's context ended the run")
	case <-time.After(20 * time.Millisecond):
	}
	if got != "v" {
		t.Fatalf("run context value %v, want v", got)
	}
	s.Stop()
	<-ended
}

// A failed setup stops what it started and leaves the part stopped.
func TestFailedStartStopsItsGoroutines(t *testing.T) {
	t.Parallel()
	var s lifecycle.StartStop
	var ended atomic.Bool
	boom := errors.New("boom")
	err := s.StartWith(context.Background(), func(context.Context) error {
		s.Go(func(ctx context.Context) { <-ctx.Done(); ended.Store(true) })
		return boom
	})
	if !errors.Is(err, boom) || !ended.Load() || !closed(s.Started()) || !closed(s.Stopped()) {
		t.Fatalf("err=%v ended=%v", err, ended.Load())
	}
}

type recorder struct {
	name string
	log  *[]string
	fail bool
}

func (r recorder) Start(context.Context) error {
	*r.log = append(*r.log, "start "+r.name)
	if r.fail {
		return errors.New(r.name)
	}
	return nil
}

func (r recorder) Stop() { *r.log = append(*r.log, "stop "+r.name) }

func TestStartAllStopAllOrder(t *testing.T) {
	t.Parallel()
	var log []string
	a, b, c := recorder{"a", &log, false}, recorder{"b", &log, false}, recorder{"c", &log, true}
	if err := lifecycle.StartAll(context.Background(), a, b, c); err == nil {
		t.Fatal("StartAll hid c's failure")
	}
	want := []string{"start a", "start b", "start c", "stop b", "stop a"}
	if len(log) != len(want) {
		t.Fatalf("got %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("got %v, want %v", log, want)
		}
	}
}

func TestBaseDefaultsAndClock(t *testing.T) {
	t.Parallel()
	var zero lifecycle.Base
	if zero.Logger() == nil || zero.Now().IsZero() {
		t.Fatal("a zero Base must log and tell time")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := lifecycle.NewBase("jobs", nil, func() time.Time { return at })
	if b.Name() != "jobs" || !b.Now().Equal(at) || b.Logger() == nil {
		t.Fatalf("name %q now %v", b.Name(), b.Now())
	}
}
