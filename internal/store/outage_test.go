package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// fakeProbe is a probe whose outcome the test sets, counting its calls.
type fakeProbe struct {
	mu    sync.Mutex
	err   error
	calls int
	gate  chan struct{} // when set, each probe waits for it
}

func (p *fakeProbe) probe(ctx context.Context) error {
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return p.err
}

func (p *fakeProbe) set(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

func (p *fakeProbe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
	}
}

var errDown = fmt.Errorf("%w: dial tcp: i/o timeout", mq.ErrUnavailable)

// A call that fails as if the database were gone starts an outage only when the probe fails
// too; the outage is logged once when it begins and once when it ends, with the number of
// requests answered 503/500 meanwhile. During it every failure is unavailable at once (no
// probe), the probe repeats until it succeeds, and its success resets the pool. Client
// cancellations and requests the database did not fail add nothing.
func TestFailedProbeStartsExactlyOneOutage(t *testing.T) {
	var log testkit.LogBuffer
	p := &fakeProbe{err: errors.New("connect: connection refused")}
	resets := 0
	var mu sync.Mutex
	tr := newOutageTracker(slog.New(slog.NewTextHandler(&log, nil)), p.probe, func() { mu.Lock(); resets++; mu.Unlock() })
	tr.every = 5 * time.Millisecond
	defer tr.close()
	s := &Store{outage: tr, timeout: time.Second, requestTimeout: time.Second}
	by := time.Now().Add(time.Minute)

	if err := tr.judge(context.Background(), errDown, by); !errors.Is(err, mq.ErrUnavailable) {
		t.Fatalf("first failure: %v, want ErrUnavailable", err)
	}
	if !tr.isDown() {
		t.Fatal("a failed probe started no outage")
	}
	select {
	case <-s.OutageBegun():
	default:
		t.Error("OutageBegun is not closed during the outage")
	}
	for range 5 {
		ctx := budget.Request(context.Background())
		s.outage.observe(ctx, tr.judge(ctx, errDown, by))
		s.Answered(ctx)
	}
	cancelled, cancel := context.WithCancel(budget.Request(context.Background()))
	cancel()
	if err := tr.judge(cancelled, errDown, by); !errors.Is(err, mq.ErrUnavailable) {
		t.Errorf("a cancelled call: %v", err)
	}
	s.Answered(cancelled) // the client went away: not failed by the database
	p.set(nil)
	waitFor(t, "the outage to end", func() bool { return !tr.isDown() && len(log.Lines()) >= 2 })

	lines := log.Lines()
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[0], "database unavailable") || !strings.Contains(lines[0], "i/o timeout") ||
		!strings.Contains(lines[0], "connection refused") {
		t.Errorf("begin line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "database available again") || !strings.Contains(lines[1], "requests_failed=5") {
		t.Errorf("end line: %s", lines[1])
	}
	mu.Lock()
	if resets != 1 {
		t.Errorf("the pool was reset %d times, want once at the end of the outage", resets)
	}
	mu.Unlock()
	select {
	case <-s.OutageBegun():
		t.Error("OutageBegun is closed after the outage ended")
	default:
	}

	// A second outage counts from zero.
	p.set(errors.New("refused again"))
	tr.okAt = time.Time{} // the last success is not fresh
	ctx := budget.Request(context.Background())
	s.outage.observe(ctx, tr.judge(ctx, errDown, by))
	s.Answered(ctx)
	p.set(nil)
	waitFor(t, "the second outage to end", func() bool { return !tr.isDown() && len(log.Lines()) >= 4 })
	if lines := log.Lines(); len(lines) != 4 || !strings.Contains(lines[3], "requests_failed=1") {
		t.Errorf("second outage:\n%s", strings.Join(lines, "\n"))
	}
}

// A probe that reaches the database turns failures into load: ErrBusy, no outage, nothing
// logged. Many failures at once share one probe (at most one in flight), and a success
// answers the failures right after it without a new one. A timeout PostgreSQL reported
// itself needs no probe, and keeps its PostgreSQL error for the callers that answer it.
func TestSucceedingProbeStartsNoOutage(t *testing.T) {
	var log testkit.LogBuffer
	p := &fakeProbe{gate: make(chan struct{})}
	tr := newOutageTracker(slog.New(slog.NewTextHandler(&log, nil)), p.probe, nil)
	defer tr.close()
	by := time.Now().Add(time.Minute)
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = tr.judge(context.Background(), errDown, by) })
	}
	time.Sleep(20 * time.Millisecond) // let them all join the probe in flight
	close(p.gate)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, mq.ErrBusy) || errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("failure %d: %v, want ErrBusy only", i, err)
		}
	}
	if c := p.count(); c != 1 {
		t.Errorf("%d probes for %d concurrent failures, want 1", c, n)
	}
	if err := tr.judge(context.Background(), errDown, by); !errors.Is(err, mq.ErrBusy) || p.count() != 1 {
		t.Errorf("a failure right after a success: %v after %d probes, want ErrBusy without a new probe", err, p.count())
	}
	if tr.isDown() || len(log.Lines()) != 0 {
		t.Errorf("down %v, log %q", tr.isDown(), log.Lines())
	}

	timeout := errors.Join(mq.ErrUnavailable, &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"})
	err := tr.judge(context.Background(), timeout, by)
	var pgErr *pgconn.PgError
	if !errors.Is(err, mq.ErrBusy) || !errors.As(err, &pgErr) || pgErr.Code != "57014" || errors.Is(err, mq.ErrUnavailable) {
		t.Errorf("statement timeout: %v, want ErrBusy carrying the PostgreSQL error", err)
	}
	if other := errors.New("ERROR: relation does not exist"); tr.judge(context.Background(), other, by) != other {
		t.Error("an answer of the database was judged")
	}
}

// A probe that does not answer by the request's bound leaves the call unavailable without
// starting an outage; the probe decides on its own once it answers.
func TestProbeOutstandingAtTheBoundLeavesTheCallUnavailable(t *testing.T) {
	p := &fakeProbe{gate: make(chan struct{})}
	tr := newOutageTracker(slog.New(slog.DiscardHandler), p.probe, nil)
	defer tr.close()
	if err := tr.judge(context.Background(), errDown, time.Now().Add(20*time.Millisecond)); !errors.Is(err, mq.ErrUnavailable) {
		t.Errorf("%v, want ErrUnavailable", err)
	}
	if tr.isDown() {
		t.Error("an outage began before the probe answered")
	}
	close(p.gate)
	waitFor(t, "the probe", func() bool { return p.count() == 1 })
}

// The store measures budgets against its configured timeouts: DB_CONNECTION_TIMEOUT,
// DB_REQUEST_TIMEOUT and DB_STATEMENT_TIMEOUT (how budgets share them: internal/budget's tests).
func TestStoreLimitsAreItsTimeouts(t *testing.T) {
	s := &Store{timeout: time.Second, requestTimeout: 10 * time.Second, bulkTimeout: 30 * time.Second}
	want := budget.Limits{Connection: time.Second, Request: 10 * time.Second, Bulk: 30 * time.Second}
	if got := s.limits(); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
}
