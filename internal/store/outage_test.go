package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// fakeProbe is a probe whose outcomes the test sets: each probe takes the next of script, then
// err once the script is used up; it counts its calls.
type fakeProbe struct {
	mu     sync.Mutex
	script []error
	err    error
	calls  int
	gate   chan struct{} // when set, each probe waits for it
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
	if len(p.script) > 0 {
		err := p.script[0]
		p.script = p.script[1:]
		return err
	}
	return p.err
}

func (p *fakeProbe) set(err error, script ...error) {
	p.mu.Lock()
	p.err, p.script = err, script
	p.mu.Unlock()
}

func (p *fakeProbe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

var (
	errDown    = fmt.Errorf("%w: dial tcp: i/o timeout", mq.ErrUnavailable)
	errRefused = errors.New("connect: connection refused")
)

// newTestTracker is a tracker over p logging to log, with its store, closed when the test ends.
func newTestTracker(t *testing.T, p *fakeProbe, log *testkit.LogBuffer) (*outageTracker, *Store) {
	tr := newOutageTracker(slog.New(slog.NewTextHandler(log, nil)), p.probe)
	t.Cleanup(tr.close)
	return tr, &Store{outage: tr, timeout: time.Second, requestTimeout: time.Second}
}

// failCall judges one call of a request that failed as if the database were gone, as the store
// does, and returns its answer.
// openOutage fails a call while the probe cannot reach the database, in a synctest bubble,
// and waits until the probes have confirmed it gone: the tracker is open.
func openOutage(t *testing.T, tr *outageTracker, s *Store) {
	t.Helper()
	failCall(s)
	synctest.Wait()
	time.Sleep(probeConfirm * outageFailures)
	synctest.Wait()
	if tr.state.Load() != open {
		t.Fatalf("state %d, want open", tr.state.Load())
	}
}

func failCall(s *Store) error {
	ctx := budget.Request(context.Background())
	err := s.outage.judge(ctx, errDown, time.Now().Add(time.Minute))
	s.outage.observe(ctx, err)
	s.Answered(ctx)
	return err
}

// The tracker's tests run in synctest bubbles: their time.Sleep calls advance the bubble's
// clock to the tracker's next probe (no real time passes), and synctest.Wait lets the probe
// goroutines finish before the test looks.

// One failed probe answers its call unavailable and starts no outage; the probe is repeated
// every probeConfirm, and an outage begins only when outageFailures probes in a row failed. A
// success in between starts the count over. The outage is logged once when it begins and once
// when it ends, with the number of requests answered 503/500 meanwhile.
func TestOutageBeginsOnlyAfterConsecutiveFailedProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.LogBuffer
		p := &fakeProbe{}
		p.set(nil, errRefused, errRefused) // two failures, then successes
		tr, s := newTestTracker(t, p, &log)

		if err := failCall(s); !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("a call whose probe failed: %v, want ErrUnavailable", err)
		}
		if tr.isDown() {
			t.Fatal("one failed probe began an outage")
		}
		synctest.Wait()
		time.Sleep(probeConfirm) // the confirmation: the second failure
		synctest.Wait()
		time.Sleep(probeConfirm) // the third probe succeeds
		synctest.Wait()
		if tr.isDown() || p.count() != 3 || tr.failed != 0 || len(log.Lines()) != 0 {
			t.Fatalf("two failures then a success: down %v after %d probes, %d failures counted, log %q",
				tr.isDown(), p.count(), tr.failed, log.Lines())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if p.count() != 3 {
			t.Errorf("%d probes, want none after the success", p.count())
		}

		// outageFailures failures in a row: the outage begins with the last, though no call
		// asked for the later probes.
		p.set(errRefused)
		before := p.count()
		if err := failCall(s); !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("%v, want ErrUnavailable", err)
		}
		synctest.Wait()
		for range outageFailures - 1 {
			if tr.isDown() {
				t.Fatalf("an outage began after %d failed probes, want %d", p.count()-before, outageFailures)
			}
			time.Sleep(probeConfirm)
			synctest.Wait()
		}
		if !tr.isDown() || p.count()-before != outageFailures {
			t.Fatalf("down %v after %d failed probes, want an outage after %d", tr.isDown(), p.count()-before, outageFailures)
		}
		select {
		case <-s.OutageBegun():
		default:
			t.Error("OutageBegun is not closed during the outage")
		}
		// During it, calls fail at once: no probe, no wait.
		probes := p.count()
		for range 5 {
			if _, err := s.acquire(budget.Request(context.Background())); !errors.Is(err, errOutage) {
				t.Fatalf("acquire during the outage: %v, want errOutage", err)
			}
			if err := failCall(s); !errors.Is(err, mq.ErrUnavailable) || p.count() != probes {
				t.Fatalf("a failure during the outage: %v after %d probes", err, p.count()-probes)
			}
		}
		cancelled, cancel := context.WithCancel(budget.Request(context.Background()))
		cancel()
		s.Answered(cancelled) // the client went away: not failed by the database

		// Back: the outage ends once the probe and outageTrials successes say so.
		p.set(nil)
		time.Sleep(probeEvery * (outageTrials + 2)) // half-open, then the probes are the trials
		synctest.Wait()
		if tr.isDown() {
			t.Fatalf("state %d after the probe succeeded %d times, want closed", tr.state.Load(), outageTrials+1)
		}
		lines := log.Lines()
		if len(lines) != 2 {
			t.Fatalf("%d log lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		if !strings.Contains(lines[0], "database unavailable") || !strings.Contains(lines[0], "i/o timeout") ||
			!strings.Contains(lines[0], "connection refused") || !strings.Contains(lines[0], "failed_probes=3") {
			t.Errorf("begin line: %s", lines[0])
		}
		if !strings.Contains(lines[1], "database available again") || !strings.Contains(lines[1], "requests_failed=5") {
			t.Errorf("end line: %s", lines[1])
		}
		select {
		case <-s.OutageBegun():
			t.Error("OutageBegun is closed after the outage ended")
		default:
		}
	})
}

// The probe reaching the database again lets outageTrials calls in (half-open) and fails the
// rest at once; their successes end the outage, and a new connection generation begins with
// it. A call let in that fails as if the database were gone reopens the outage: calls fail at
// once and waits end again, until the probe reaches the database again.
func TestHalfOpenLetsAFewCallsInAndReopensOnAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.LogBuffer
		p := &fakeProbe{err: errRefused}
		tr, s := newTestTracker(t, p, &log)
		openOutage(t, tr, s)
		gen := tr.gen.Load()

		p.set(nil)
		time.Sleep(probeEvery)
		synctest.Wait()
		if tr.state.Load() != halfOpen || tr.gen.Load() != gen+1 {
			t.Fatalf("state %d, generation %d after the probe succeeded, want half-open and generation %d",
				tr.state.Load(), tr.gen.Load(), gen+1)
		}
		select {
		case <-s.OutageBegun():
			t.Fatal("waits of the calls let in end at once in half-open")
		default:
		}
		for i := range outageTrials {
			if err := tr.admit(); err != nil {
				t.Fatalf("call %d in half-open: %v", i, err)
			}
		}
		if err := tr.admit(); !errors.Is(err, errRecovering) || !errors.Is(err, mq.ErrUnavailable) {
			t.Fatalf("call beyond the trials: %v, want errRecovering", err)
		}
		// One of the trials fails: back to the outage.
		if err := failCall(s); !errors.Is(err, mq.ErrUnavailable) || tr.state.Load() != open {
			t.Fatalf("a trial failed: %v, state %d, want ErrUnavailable and open", err, tr.state.Load())
		}
		select {
		case <-s.OutageBegun():
		default:
			t.Fatal("OutageBegun is not closed once the outage reopened")
		}
		if err := tr.admit(); !errors.Is(err, errOutage) {
			t.Fatalf("a call after the reopening: %v, want errOutage", err)
		}

		// Half-open again: the calls let in succeed, and the outage ends.
		time.Sleep(probeEvery)
		synctest.Wait()
		if tr.state.Load() != halfOpen || tr.gen.Load() != gen+2 {
			t.Fatalf("state %d, generation %d, want half-open and generation %d", tr.state.Load(), tr.gen.Load(), gen+2)
		}
		for range outageTrials {
			if err := tr.admit(); err != nil {
				t.Fatal(err)
			}
			tr.observe(context.Background(), nil)
		}
		if tr.state.Load() != closed || tr.admit() != nil {
			t.Fatalf("state %d after %d successful trials, want closed", tr.state.Load(), outageTrials)
		}
		if lines := log.Lines(); len(lines) != 2 || !strings.Contains(lines[1], "database available again") {
			t.Errorf("log, want one line at the beginning and one at the end:\n%s", strings.Join(lines, "\n"))
		}
		// Without calls, the probes are the trials: the outage ends all the same.
		p.set(errRefused)
		time.Sleep(time.Second) // the last success is no longer fresh
		openOutage(t, tr, s)
		p.set(nil)
		time.Sleep(probeEvery * (outageTrials + 2))
		synctest.Wait()
		if tr.state.Load() != closed {
			t.Errorf("state %d with probes succeeding and no calls, want closed", tr.state.Load())
		}
	})
}

// A probe that reaches the database turns failures into load: ErrBusy, no outage, nothing
// logged. Many failures at once share one probe (at most one in flight), and a success
// answers the failures right after it without a new one. A timeout PostgreSQL reported
// itself needs no probe, and keeps its PostgreSQL error for the callers that answer it; so do
// refusals for lack of connection slots, by the server or by a pooler.
func TestSucceedingProbeStartsNoOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.LogBuffer
		p := &fakeProbe{gate: make(chan struct{})}
		tr, _ := newTestTracker(t, p, &log)
		by := time.Now().Add(time.Minute)
		const n = 50
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = tr.judge(context.Background(), errDown, by) })
		}
		synctest.Wait() // all of them wait for the probe in flight
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
		p.set(errRefused) // a probe now would fail: the refusals below must not ask it
		time.Sleep(time.Second)
		for _, refusal := range []*pgconn.PgError{
			{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"},
			{Severity: "FATAL", Code: "53300", Message: "remaining connection slots are reserved for roles with the SUPERUSER attribute"},
			{Severity: "FATAL", Code: "08P01", Message: "no more connections allowed (max_client_conn)"},
			{Severity: "FATAL", Code: "08P01", Message: "query_wait_timeout"},
		} {
			err := tr.judge(context.Background(), errors.Join(mq.ErrUnavailable, refusal), by)
			if !errors.Is(err, mq.ErrBusy) || errors.Is(err, mq.ErrUnavailable) || errors.As(err, &pgErr) {
				t.Errorf("%s: %v, want ErrBusy only", refusal.Message, err)
			}
		}
		if p.count() != 1 || tr.isDown() {
			t.Errorf("refusals for load asked the probe (%d probes) or began an outage (%v)", p.count(), tr.isDown())
		}
	})
}

// A probe that does not answer by the request's bound leaves the call unavailable without
// starting an outage; the probe decides on its own once it answers.
func TestProbeOutstandingAtTheBoundLeavesTheCallUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProbe{gate: make(chan struct{})}
		tr := newOutageTracker(slog.New(slog.DiscardHandler), p.probe)
		defer tr.close()
		if err := tr.judge(context.Background(), errDown, time.Now().Add(20*time.Millisecond)); !errors.Is(err, mq.ErrUnavailable) {
			t.Errorf("%v, want ErrUnavailable", err)
		}
		if tr.isDown() {
			t.Error("an outage began before the probe answered")
		}
		close(p.gate)
		synctest.Wait()
		if p.count() != 1 || tr.isDown() {
			t.Errorf("%d probes, down %v; want 1 probe and no outage", p.count(), tr.isDown())
		}
	})
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

// The end of an outage closes no pooled connection at once: each one opened before it stays
// in the pool until it is next taken, and is then destroyed instead of handed out (a new one
// replaces it), so a connection to a backend frozen during the outage is never used again and
// the return meets no full pool of reconnects.
func TestOutageEndDropsOldConnectionsWhenTaken(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{DSN: testDSN, Schema: "outage_generation", MaxConns: 4, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var old []*pgxpool.Conn
	pids := map[uint32]bool{}
	for range 3 {
		c, err := s.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, c)
		pids[c.Conn().PgConn().PID()] = true
	}
	for _, c := range old {
		c.Release()
	}
	// An outage, then the probe reaching the database again.
	tr := s.outage
	tr.mu.Lock()
	tr.begin(errDown, errRefused)
	tr.mu.Unlock()
	if tr.probed(nil) || tr.state.Load() != halfOpen {
		t.Fatalf("state %d after the probe succeeded, want half-open", tr.state.Load())
	}
	if n := s.pool.Stat().TotalConns(); n != 3 {
		t.Errorf("%d pooled connections right after the outage, want the 3 still there", n)
	}
	c, err := s.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if pids[c.Conn().PgConn().PID()] {
		t.Error("a connection opened before the outage was handed out after it")
	}
	if n := s.pool.Stat().TotalConns(); n > 3 {
		t.Errorf("%d pooled connections, want at most 3", n)
	}
}

// The probe counts a pooler's refusal for lack of slots as an answer: a server that accepts
// the connection and answers the start-up with PgBouncer's "no more connections allowed" error
// (SQLSTATE 08P01, as PgBouncer 1.18 sends it) is load, while its other errors fail the probe.
func TestProbeCountsAPoolersRefusalAsAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		message string
		load    bool
	}{
		{"no more connections allowed (max_client_conn)", true},
		{"query_wait_timeout", true},
		{"pgbouncer cannot connect to server", false},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				b := pgproto3.NewBackend(c, c)
				if _, err := b.ReceiveStartupMessage(); err == nil {
					b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "08P01", Message: tc.message})
					_ = b.Flush()
				}
				c.Close()
			}
		}()
		s, err := Open(context.Background(), Options{DSN: fmt.Sprintf("postgres://queen@%s/queen?sslmode=disable", ln.Addr()),
			ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = s.probe(context.Background())
		s.Close()
		ln.Close()
		if tc.load != (err == nil) {
			t.Errorf("%q: probe %v, want load %v", tc.message, err, tc.load)
		}
	}
}
