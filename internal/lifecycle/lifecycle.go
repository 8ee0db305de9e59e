// Package lifecycle is the one start/stop discipline of queen-go's long-lived parts, after
// River's startstop and baseservice. A part embeds StartStop and starts every goroutine with
// Go, so Stop ends and waits for all of them; it embeds Base for its name, logger and clock.
// A part runs once; only Stop ends it; Stop before Start does nothing; Stop may be called
// again, from any goroutine; a part that is not running refuses work rather than doing it
// half-way.
package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrStopped is the cause of a run's context once Stop was called, and what a part returns for
// work it refuses because it is not running.
var ErrStopped = errors.New("stopped")

// Service is a long-lived part: Start returns once its goroutines are running, Stop once they
// have all returned.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

// StartStop tracks one run of a part. The zero value is ready; embed it and call StartWith
// from the part's Start. It must not be copied after first use.
type StartStop struct {
	mu       sync.Mutex
	ctx      context.Context // the run's; nil until started
	cancel   context.CancelCauseFunc
	stopping bool
	wg       sync.WaitGroup
	started  chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

// chans allocates the signal channels, so they can be waited on before Start; s.mu is held.
func (s *StartStop) chans() {
	if s.started == nil {
		s.started, s.stopped = make(chan struct{}), make(chan struct{})
	}
}

// StartWith begins the run and calls setup, which starts the part's goroutines with Go; if
// setup fails, they are stopped and its error returned. The run's context keeps ctx's values
// but ends only at Stop, so shutdown follows the owner's order and a Stop that misses a
// goroutine shows as a leak rather than being hidden by a parent's cancellation. A second call
// while running does nothing; a call after Stop returns ErrStopped.
func (s *StartStop) StartWith(ctx context.Context, setup func(ctx context.Context) error) error {
	s.mu.Lock()
	s.chans()
	switch {
	case s.stopping:
		s.mu.Unlock()
		return ErrStopped
	case s.ctx != nil:
		s.mu.Unlock()
		return nil
	}
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx := s.ctx
	s.mu.Unlock()
	err := setup(runCtx)
	close(s.started) // also after a failed start, so nobody waits for it forever
	if err != nil {
		s.Stop()
	}
	return err
}

// Go runs fn on a goroutine owned by the run: Stop cancels fn's context and waits for fn to
// return. It reports false, without running fn, when the part is not running.
func (s *StartStop) Go(fn func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.stopping {
		return false
	}
	// Added under mu, which Stop takes before it waits: no Add can race with that Wait.
	s.wg.Add(1)
	go func(ctx context.Context) {
		defer s.wg.Done()
		fn(ctx)
	}(s.ctx)
	return true
}

// Running reports whether the part has started and Stop has not been called.
func (s *StartStop) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx != nil && !s.stopping
}

// Stop cancels the run's context and waits for every goroutine started with Go. It does
// nothing before Start and is safe to call again or concurrently: every call returns once the
// run has ended. A goroutine of the run must not call it: it would wait for itself.
func (s *StartStop) Stop() {
	s.mu.Lock()
	if s.ctx == nil {
		s.mu.Unlock()
		return
	}
	if !s.stopping {
		s.stopping = true
		s.cancel(ErrStopped)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.stopOnce.Do(func() { close(s.stopped) })
}

// Started is closed once a Start has finished, successfully or not.
func (s *StartStop) Started() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chans()
	return s.started
}

// Stopped is closed once Stop has returned: every goroutine of the run has ended.
func (s *StartStop) Stopped() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chans()
	return s.stopped
}

// Base is a part's name, its logger (lines labelled with the name) and its clock, injected so
// tests move time instead of sleeping; timers, tickers and durations stay on the runtime's
// clock. A zero Base logs to slog.Default() and reads time.Now.
type Base struct {
	name   string
	logger *slog.Logger
	clock  func() time.Time
}

// NewBase returns the base of a part named name; nil logger and clock take the defaults.
func NewBase(name string, logger *slog.Logger, clock func() time.Time) Base {
	if logger == nil {
		logger = slog.Default()
	}
	return Base{name: name, logger: logger.With("component", name), clock: clock}
}

// Name is the part's name, as its log lines carry it.
func (b *Base) Name() string { return b.name }

// Logger is the part's logger.
func (b *Base) Logger() *slog.Logger { return cmp.Or(b.logger, slog.Default()) }

// Now reads the part's clock.
func (b *Base) Now() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock()
}

// StartAll starts services in order. When one fails, those already started are stopped in
// reverse order and its error returned.
func StartAll(ctx context.Context, services ...Service) error {
	for i, s := range services {
		if err := s.Start(ctx); err != nil {
			StopAll(services[:i]...)
			return err
		}
	}
	return nil
}

// StopAll stops services in reverse order: listed dependencies first, each stops before what
// it depends on.
func StopAll(services ...Service) {
	for i := len(services) - 1; i >= 0; i-- {
		services[i].Stop()
	}
}

// Sleep waits for d or until ctx ends, whichever comes first, and reports whether the whole of
// d passed (River's CancellableSleep): the pause of a loop that must stop with its context.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
